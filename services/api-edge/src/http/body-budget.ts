import type { IncomingMessage } from 'node:http';
import type { Request, RequestHandler } from 'express';
import { DomainError } from '@gmg/errors';
import { largeBodies, largeBodiesWaiting, largeBodyBytesInFlight } from '@gmg/observability';
import { lingerThenClose } from './body-linger';

/**
 * Bodies below this size are not counted: a submit of a few hundred bytes costs nothing a budget would bound (the
 * connection count bounds those), and the hot path stays one header read and a comparison.
 */
export const LARGE_BODY_BYTES = 256 * 1024;

/** The rule named in the 503 of a large body that waited for the budget in vain. */
export const BODY_BUDGET_RULE = 'max_body_bytes_in_flight';

interface Waiter {
  readonly amount: number;
  readonly grant: (release: () => void) => void;
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
 */
export class BodyBudget {
  private used = 0;
  private readonly queue: Waiter[] = [];

  constructor(
    readonly capacity: number,
    readonly waitMs: number,
  ) {
    if (!(capacity > 0)) throw new Error('BodyBudget: capacity must be positive');
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
  take(bytes: number, grant: (release: () => void) => void, refuse: () => void): (() => void) | undefined {
    const amount = Math.min(Math.max(0, bytes), this.capacity);
    if (this.queue.length === 0 && this.used + amount <= this.capacity) {
      this.admit(amount, grant, 'admitted');
      return undefined;
    }
    if (this.waitMs <= 0) {
      largeBodies.inc({ outcome: 'refused' });
      refuse();
      return undefined;
    }
    const waiter: Waiter = { amount, grant };
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

  private admit(amount: number, grant: (release: () => void) => void, outcome: 'admitted' | 'waited'): void {
    this.used += amount;
    largeBodyBytesInFlight.set(this.used);
    largeBodies.inc({ outcome });
    let released = false;
    grant(() => {
      if (released) return;
      released = true;
      this.used -= amount;
      largeBodyBytesInFlight.set(this.used);
      this.drain();
    });
  }

  private remove(waiter: Waiter): boolean {
    const i = this.queue.indexOf(waiter);
    if (i < 0) return false;
    this.queue.splice(i, 1);
    largeBodiesWaiting.set(this.queue.length);
    return true;
  }

  /** Admits waiters from the head while they fit (a bounded loop: each pass removes one waiter). */
  private drain(): void {
    while (this.queue.length > 0 && this.used + this.queue[0].amount <= this.capacity) {
      const waiter = this.queue.shift()!;
      largeBodiesWaiting.set(this.queue.length);
      clearTimeout(waiter.timer);
      this.admit(waiter.amount, waiter.grant, 'waited');
    }
  }
}

/**
 * The bytes a request's body may take: its Content-Length, or — for a chunked body, whose size is known only at its
 * end — the most the route accepts. Undefined when the request needs no share: no body, a small one, or one
 * declared over the route's cap (answered 413 from its Content-Length without being read). The cap (`limitOf`) is
 * asked only for a body that may be large: a small submit costs a header read and a comparison.
 */
export function largeBodyBytes<R extends IncomingMessage>(req: R, limitOf: (req: R) => number): number | undefined {
  const declared = req.headers['content-length'];
  if (declared !== undefined) {
    const n = Number(declared);
    return n >= LARGE_BODY_BYTES && n <= limitOf(req) ? n : undefined;
  }
  if (req.headers['transfer-encoding'] === undefined) return undefined;
  const limit = limitOf(req);
  return limit >= LARGE_BODY_BYTES ? limit : undefined;
}

/**
 * The middleware in front of a body parser: a large body waits here for its share of the budget, which is given back
 * when the response is over (or the client goes away). `limitOf` is the cap of the parser behind it. A body read
 * already (the idempotency guard runs the parsers before the route does) passes: it holds its share from then.
 */
export function bodyBudgetGate(budget: BodyBudget, limitOf: (req: Request) => number): RequestHandler {
  return (req, res, next) => {
    if (req.body !== undefined) return next(); // read already, under the share taken then (the idempotency guard parses first)
    const bytes = largeBodyBytes(req, limitOf);
    if (bytes === undefined) return next();
    const cancel = budget.take(
      bytes,
      (release) => {
        res.once('close', release);
        if (res.writableEnded || res.destroyed) release();
        else next();
      },
      () => {
        lingerThenClose(req, res);
        next(new DomainError(
          'service_unavailable',
          `The gateway is reading as many large request bodies as it holds at once (${BODY_BUDGET_RULE}); retry shortly, or send large media as URLs (POST /v1/uploads/images gives one)`,
          { rule: BODY_BUDGET_RULE, retryAfter: 1 },
        ));
      },
    );
    if (cancel) res.once('close', cancel);
  };
}
