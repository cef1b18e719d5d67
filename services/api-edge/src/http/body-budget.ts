import type { IncomingMessage } from 'node:http';
import type { Request, RequestHandler, Response } from 'express';
import { DomainError } from '@gmg/errors';
import { largeBodies, largeBodiesWaiting, largeBodyBytesInFlight } from '@gmg/observability';
import { lingerThenClose } from './body-linger';
import { PRINCIPAL_LOCAL } from './principal';

/**
 * Bodies below this size are not counted: a submit of a few hundred bytes costs nothing a budget would bound (the
 * connection count bounds those), and the hot path stays one header read and a comparison.
 */
export const LARGE_BODY_BYTES = 256 * 1024;

/** The rule named in the 503 of a large body that waited for the budget in vain. */
export const BODY_BUDGET_RULE = 'max_body_bytes_in_flight';

/** Given to an admitted body: `release` gives its bytes back; `grow(n)` counts `n` more bytes it has read. */
type Grant = (release: () => void, grow: (bytes: number) => void) => void;

interface Waiter {
  readonly amount: number;
  readonly tenant: string;
  readonly grant: Grant;
  timer?: NodeJS.Timeout;
}

/**
 * How many bytes of large request bodies one edge process holds at once (MAX_BODY_BYTES_IN_FLIGHT). A large body
 * takes its share before a byte of it is read and gives it back when its response is over, so the decoded copies
 * made while the request is handled (the JSON string, Base64 media decoded into Buffers) are inside the bound too.
 * A body that does not fit waits, unread (the socket is paused: the client's sends block), in arrival order — a
 * large body is never overtaken by smaller ones — for at most `waitMs`; then it is refused (503).
 *
 * A body larger than the whole budget takes the whole budget: it waits for every other large body to finish and is
 * then admitted alone, never refused for its size (the route's cap does that, 413).
 *
 * Tenants (API keys): one key holds at most `tenantShare` of the capacity (BODY_BUDGET_KEY_SHARE), so a few slow
 * large bodies of one key cannot take the budget from every other key. A body over its key's share waits, and the
 * line is served in order among the bodies whose key is within its share: a key's own waiting bodies never hold
 * up another key's. A body larger than the share is admitted when its key holds nothing else (never refused for
 * its size).
 */
export class BodyBudget {
  private used = 0;
  private readonly queue: Waiter[] = [];
  /** Bytes held per tenant (only tenants holding some). */
  private readonly held = new Map<string, number>();
  private readonly shareBytes: number;

  constructor(
    readonly capacity: number,
    readonly waitMs: number,
    /** The most of `capacity` one tenant holds at once, a fraction in (0, 1]. */
    readonly tenantShare = 1,
  ) {
    if (!(capacity > 0)) throw new Error('BodyBudget: capacity must be positive');
    if (!(tenantShare > 0 && tenantShare <= 1)) throw new Error('BodyBudget: tenantShare must be in (0, 1]');
    this.shareBytes = Math.floor(capacity * tenantShare);
  }

  /** Bytes of large bodies `tenant` holds now. */
  heldBy(tenant: string): number {
    return this.held.get(tenant) ?? 0;
  }

  /**
   * Whether `tenant`'s share has room for `amount` more bytes (a tenant holding nothing always has). A share of the
   * whole budget never blocks: then a body that does not fit waits for the budget, in line, and nobody overtakes it.
   */
  private shareAllows(tenant: string, amount: number): boolean {
    const mine = this.heldBy(tenant);
    return mine === 0 || mine + amount <= this.shareBytes || this.shareBytes >= this.capacity;
  }

  /** Whether a body of `amount` bytes of `tenant` may be admitted now (room in the budget and in the tenant's share). */
  private fits(amount: number, tenant: string): boolean {
    return this.used + amount <= this.capacity && this.shareAllows(tenant, amount);
  }

  /** Whether the bytes held, grown bodies included, are over the budget or `tenant` over its share: its readers pause. */
  overFor(tenant: string): boolean {
    return this.used > this.capacity || (this.heldBy(tenant) > this.shareBytes && this.held.size > 1);
  }

  /** Readers paused by overFor, called (once each) whenever bytes are given back. */
  private readonly paused = new Set<() => void>();

  /** Calls `resume` once bytes are given back (a paused reader then checks overFor again). */
  onRoom(resume: () => void): () => void {
    this.paused.add(resume);
    return () => this.paused.delete(resume);
  }

  /** Bytes of large bodies admitted and not yet released. */
  get inFlight(): number {
    return this.used;
  }

  /** Large bodies waiting for room. */
  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Admits `bytes`: `grant(release)` runs at once when they fit and nobody waits before them, else once enough is
   * released; `refuse()` runs instead when `waitMs` passes first. When the bytes wait, returns a cancel function for
   * a waiter whose client went away (a no-op once granted or refused). `release` may be called any number of times.
   */
  take(bytes: number, grant: Grant, refuse: () => void, tenant = ''): (() => void) | undefined {
    const amount = Math.min(Math.max(0, bytes), this.capacity);
    // no body of a tenant within its share waits before this one: take it now if it fits
    if (!this.queue.some((w) => this.withinShare(w)) && this.fits(amount, tenant)) {
      this.admit(amount, tenant, grant, 'admitted');
      return undefined;
    }
    if (this.waitMs <= 0) {
      largeBodies.inc({ outcome: 'refused' });
      refuse();
      return undefined;
    }
    const waiter: Waiter = { amount, tenant, grant };
    waiter.timer = setTimeout(() => {
      if (!this.remove(waiter)) return;
      largeBodies.inc({ outcome: 'refused' });
      refuse();
      this.drain(); // the head may have been the one that did not fit
    }, this.waitMs);
    this.queue.push(waiter);
    largeBodiesWaiting.set(this.queue.length);
    return () => {
      if (!this.remove(waiter)) return;
      clearTimeout(waiter.timer);
      this.drain();
    };
  }

  private admit(amount: number, tenant: string, grant: Grant, outcome: 'admitted' | 'waited'): void {
    let holding = 0;
    let released = false;
    const add = (n: number): void => {
      holding += n;
      this.used += n;
      this.held.set(tenant, this.heldBy(tenant) + n);
      largeBodyBytesInFlight.set(this.used);
    };
    add(amount);
    largeBodies.inc({ outcome });
    grant(
      () => {
        if (released) return;
        released = true;
        this.used -= holding;
        const left = this.heldBy(tenant) - holding;
        if (left > 0) this.held.set(tenant, left);
        else this.held.delete(tenant);
        largeBodyBytesInFlight.set(this.used);
        this.drain();
        const resumes = [...this.paused];
        this.paused.clear();
        for (const resume of resumes) resume();
      },
      (n) => {
        if (!released && n > 0) add(n);
      },
    );
  }

  /** A waiter whose tenant's share has room for it (or that holds nothing): it may go next. */
  private withinShare(w: Waiter): boolean {
    return this.shareAllows(w.tenant, w.amount);
  }

  private remove(waiter: Waiter): boolean {
    const i = this.queue.indexOf(waiter);
    if (i < 0) return false;
    this.queue.splice(i, 1);
    largeBodiesWaiting.set(this.queue.length);
    return true;
  }

  /**
   * Admits waiters in order while they fit: the first waiter within its tenant's share goes next, and when it does
   * not fit the budget nobody overtakes it (a bounded loop: each pass removes one waiter).
   */
  private drain(): void {
    for (;;) {
      const i = this.queue.findIndex((w) => this.withinShare(w));
      if (i < 0 || this.used + this.queue[i].amount > this.capacity) return;
      const [waiter] = this.queue.splice(i, 1);
      largeBodiesWaiting.set(this.queue.length);
      clearTimeout(waiter.timer);
      this.admit(waiter.amount, waiter.tenant, waiter.grant, 'waited');
    }
  }
}

/** What a request's body takes of the budget: `bytes` up front; a chunked body then grows by what it really reads. */
interface BodyShare {
  bytes: number;
  chunked: boolean;
}

/**
 * The bytes a request's body takes: its Content-Length; or, for a chunked body (whose size is known only at its
 * end), LARGE_BODY_BYTES up front and then every byte it reads beyond — its real size, not the route's cap (a small
 * chunked submit no longer holds 24 MiB of the budget). Undefined when the request needs no share: no body, a
 * small one, one declared over the route's cap (answered 413 from its Content-Length without being read), or a
 * chunked body on a route whose cap is small. The cap (`limitOf`) is asked only for a body that may be large.
 */
export function largeBodyBytes<R extends IncomingMessage>(req: R, limitOf: (req: R) => number): BodyShare | undefined {
  const declared = req.headers['content-length'];
  if (declared !== undefined) {
    const n = Number(declared);
    return n >= LARGE_BODY_BYTES && n <= limitOf(req) ? { bytes: n, chunked: false } : undefined;
  }
  if (req.headers['transfer-encoding'] === undefined) return undefined;
  return limitOf(req) >= LARGE_BODY_BYTES ? { bytes: LARGE_BODY_BYTES, chunked: true } : undefined;
}

/** The tenant a body is counted for: the API key (auth runs before every gated parser), else the client address. */
const tenantOf = (req: Request, res: Response): string => {
  const p = res.locals[PRINCIPAL_LOCAL] as { keyId?: string } | undefined;
  return p?.keyId ? `key:${p.keyId}` : `ip:${req.ip ?? ''}`;
};

/**
 * A chunked body counts what it reads beyond its first share, and stops reading (the socket is paused: the client's
 * sends block) while the budget is over its capacity or its key over its share, until bytes are given back.
 */
function countChunked(req: Request, budget: BodyBudget, tenant: string, first: number, grow: (n: number) => void): void {
  let seen = 0;
  let stopWatching: (() => void) | undefined;
  const resume = (): void => {
    stopWatching = undefined;
    if (req.destroyed) return;
    if (budget.overFor(tenant)) stopWatching = budget.onRoom(resume);
    else req.resume();
  };
  const onData = (chunk: Buffer): void => {
    const before = seen;
    seen += chunk.length;
    const beyond = Math.max(0, seen - Math.max(first, before));
    if (beyond === 0) return;
    grow(beyond);
    if (!stopWatching && budget.overFor(tenant)) {
      req.pause();
      stopWatching = budget.onRoom(resume);
    }
  };
  req.on('data', onData);
  req.once('end', () => req.off('data', onData));
  req.once('close', () => {
    req.off('data', onData);
    stopWatching?.();
  });
}

/**
 * The middleware in front of a body parser: a large body waits here for its share of the budget, which is given back
 * when the response is over (or the client goes away). `limitOf` is the cap of the parser behind it. A body read
 * already (the idempotency guard runs the parsers before the route does) passes: it holds its share from then.
 */
export function bodyBudgetGate(budget: BodyBudget, limitOf: (req: Request) => number): RequestHandler {
  return (req, res, next) => {
    if (req.body !== undefined) return next(); // read already, under the share taken then (the idempotency guard parses first)
    const share = largeBodyBytes(req, limitOf);
    if (share === undefined) return next();
    const tenant = tenantOf(req, res);
    const cancel = budget.take(
      share.bytes,
      (release, grow) => {
        res.once('close', release);
        if (res.writableEnded || res.destroyed) return release();
        if (share.chunked) countChunked(req, budget, tenant, share.bytes, grow);
        next();
      },
      () => {
        lingerThenClose(req, res);
        next(
          new DomainError(
            'service_unavailable',
            `The gateway is reading as many large request bodies as it holds at once (${BODY_BUDGET_RULE}); retry shortly, or send large media as URLs (POST /v1/uploads/images gives one)`,
            { rule: BODY_BUDGET_RULE, retryAfter: 1 },
          ),
        );
      },
      tenant,
    );
    if (cancel) res.once('close', cancel);
  };
}
