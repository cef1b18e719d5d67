import {
  LeaseBookCore,
  StatementBatcher,
  type ChatCallRepository,
  type CreditLeaseRepository,
  type IdleLeases,
  type LeasedCall,
  type OpenedCall,
  type Pending,
} from '@gmg/db';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';

/**
 * The edge's side of credit leases (docs/messages.md): money held in Postgres per account as a lease, spent here
 * in memory, so a chat call has no Postgres round trip before its first byte. Invariants kept locally:
 * - a call reserves the most it can cost from its account's lease, and only while `reserved ≤ amount`;
 * - a finished call costs at most its reservation; the unused part goes back to the lease at once;
 * - a call's row is written (batched, issued before its upstream request; a stream's writes after its first wait
 *   for it, a whole answer does not: its record writes the row if it is missing), and its cost so far journalled
 *   every `journalMs` while it runs: closing the lease (a sweeper, after this edge died) charges it that much;
 * - finished calls are written in batches (task row + capture, once: `record` skips a call already ended); a batch
 *   that fails (Postgres unreachable) keeps its calls for a retry, never drops them;
 * - a lease is closed only once nothing runs on it and every finished call on it is written;
 * - a lease no longer renewed (this edge died or lost Postgres) is closed by any sweeper, which releases what
 *   it did not record; a batch that finds its lease closed charges its calls directly from the balance.
 *
 * Call rows (before their first byte) and finished calls go through one StatementBatcher (@gmg/db): one statement
 * in flight; a call that finds none goes at once, alone, and the calls that come meanwhile go together in the next,
 * split per lease: one statement per lease (`write`, issue 36 item 3) carrying that lease's pending open rows and
 * records together — committed asynchronously when it carries only open rows, synchronously with a record. A call
 * whose open row and record are both pending is sent once, as its record (which writes the row), and its open row
 * is answered with the statement. A finished call's record never waits for company: until it is written, a kill -9
 * of the edge would charge only what the call journalled (docs/messages.md).
 */
export interface CreditLeaseBookOptions {
  leases: Pick<CreditLeaseRepository, 'grant' | 'write' | 'renew' | 'close' | 'journal'>;
  calls: Pick<ChatCallRepository, 'open' | 'settle'>;
  logger: Logger;
  /** What a lease asks for (it gets less when the balance is smaller, never less than the call needs). */
  targetMinor: bigint;
  /** A lease expires this long after its last renewal; renewed every third of it while in use. */
  ttlMs: number;
  /** The cost so far of running calls is journalled this often (what a crash of this edge charges them). */
  journalMs?: number;
  /** A lease unused this long is closed (its money back to the account). */
  idleCloseMs?: number;
  now?: () => number;
  /** This edge's task-hold leases: asked for the account's idle leased money before a call is refused (402). */
  idle?: IdleLeases;
}

/** The first retry of a failed batch of finished calls; each further failure doubles it, up to the renew interval. */
const FIRST_RETRY_MS = 50;

interface LocalLease {
  id: string;
  accountId: string;
  amount: bigint;
  /** Reservations of calls in flight + costs of finished calls (recorded or pending). */
  committed: bigint;
  inflight: number;
  /** Finished calls whose batch failed: pushed again by the next flush (a retry, the renew tick or `close`). */
  pending: LeasedCall[];
  /** Finished calls queued in (or being written by) the batcher, each until its statement answers it. */
  recording: Set<Promise<void>>;
  /** Its close, while one is under way (see `flushAndClose`). */
  closing: Promise<void> | undefined;
  /** Calls running, for the journal. */
  running: Map<string, RunningCall>;
  lastUsed: number;
  renewedAt: number;
  /** No new reservations: replaced by a newer lease, idle, or closed by a sweeper. */
  retired: boolean;
}

interface RunningCall {
  live: () => bigint;
  journalled: bigint;
  /** Its row is written: journal updates reach it. */
  opened: boolean;
}

/** A call of a lease waiting in the batcher: its open row (before its first byte) or its record (it ended). */
type LeaseItem = { kind: 'open'; lease: LocalLease; call: OpenedCall; running: RunningCall } | { kind: 'record'; lease: LocalLease; call: LeasedCall };

/** A started call's row: `durable` resolves once it is written; `failure` is set once its write was refused. */
export interface OpenRow {
  readonly durable: Promise<void>;
  failure: unknown;
}

export interface Reservation {
  readonly lease: LocalLease;
  readonly amount: bigint;
}

/** The batch's items grouped by lease, in the order the leases first appear. */
function byLease<I extends { lease: LocalLease }, R>(batch: Array<Pending<I, R>>): Map<LocalLease, Array<Pending<I, R>>> {
  const groups = new Map<LocalLease, Array<Pending<I, R>>>();
  for (const p of batch) {
    const group = groups.get(p.item.lease);
    if (group) group.push(p);
    else groups.set(p.item.lease, [p]);
  }
  return groups;
}

export class CreditLeaseBook extends LeaseBookCore<LocalLease> implements IdleLeases {
  private journalTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  /** Record batches failed in a row (the retry's backoff); 0 after one succeeds. */
  private failures = 0;
  /**
   * Rows of started calls (answers: written, or why not) and finished calls (answers: written or charged directly;
   * rejected: kept in their lease's `pending` for a retry), one statement per lease.
   */
  private readonly writes = new StatementBatcher<LeaseItem, void>((batch) => this.write(batch));

  constructor(private readonly o: CreditLeaseBookOptions) {
    super(o.leases, o);
  }

  /**
   * Reserves `amount` for one call; a lease is granted first when the account has none with room (402 when the
   * balance cannot cover it, after this edge's task-hold leases gave back the account's idle money: `idle`).
   */
  async reserve(accountId: string, amount: bigint): Promise<Reservation> {
    for (let round = 0; round < 2; round++) {
      const r = await this.reserveOnce(accountId, amount);
      if (r) return r;
      if (round > 0 || !(await this.o.idle?.returnIdle(accountId))) break;
    }
    throw new DomainError('payment_required', 'Insufficient balance for this request');
  }

  /** IdleLeases: the account's leases with no call running, closed once their finished calls are written. */
  async returnIdle(accountId: string): Promise<boolean> {
    const idle = [...this.leases.values()].filter((l) => l.accountId === accountId && l.inflight === 0);
    await Promise.all(idle.map((l) => this.flushAndClose(l)));
    return idle.some((l) => !this.leases.has(l.id));
  }

  private async reserveOnce(accountId: string, amount: bigint): Promise<Reservation | undefined> {
    // every successful grant lets at least one waiting call through, so this ends; the bound is a safety net
    for (let attempt = 0; attempt < 1000; attempt++) {
      const l = this.current.get(accountId);
      if (l && !l.retired && this.fresh(l) && l.amount - l.committed >= amount) {
        l.committed += amount;
        l.inflight++;
        l.lastUsed = this.now();
        return { lease: l, amount };
      }
      if (!(await this.grantFor(accountId, amount))) break;
    }
    return undefined;
  }

  /**
   * A call has started: its row is written by the batcher (at once when no statement is in flight, else with every
   * call started or finished meanwhile). `durable` resolves once it is written (the relay's first write does not wait
   * for it, a stream's next ones do). `live` is its cost so far, journalled while it runs.
   */
  open(r: Reservation, call: Omit<OpenedCall, 'reserved'>, live: () => bigint): OpenRow {
    const running: RunningCall = { live, journalled: 0n, opened: false };
    r.lease.running.set(call.id, running);
    const durable = this.writes.push({ kind: 'open', lease: r.lease, call: { ...call, reserved: r.amount }, running });
    const row: OpenRow = { durable, failure: undefined };
    // a call that ends before its row is written never awaits it; the relay reads `failure`
    durable.catch((err: unknown) => (row.failure = err ?? new Error('the call row was not written')));
    this.journalTimer ??= setInterval(() => void this.journal(), this.o.journalMs ?? 1000).unref();
    return row;
  }

  /** A call is over: its cost (≤ its reservation) goes to the batcher, the rest is free again. */
  finish(r: Reservation, call: Omit<LeasedCall, 'reserved'>): void {
    const l = r.lease;
    const cost = call.cost < r.amount ? call.cost : r.amount;
    l.committed -= r.amount - cost;
    l.inflight--;
    l.running.delete(call.id);
    this.record(l, { ...call, reserved: r.amount, cost });
    // the last call of a lease replaced meanwhile: give its money back once its calls are written
    if (l.retired && l.inflight === 0) void this.flushAndClose(l);
  }

  /**
   * Writes every finished call (the ones a failed batch kept too) and waits for them, then closes the leases that
   * are retired or idle, with nothing running and nothing left to write.
   */
  async flush(): Promise<void> {
    for (const l of this.leases.values()) this.requeue(l);
    await Promise.allSettled([...this.leases.values()].flatMap((l) => [...l.recording]));
    for (const l of [...this.leases.values()]) {
      if (l.inflight === 0 && l.pending.length === 0 && (l.retired || this.now() - l.lastUsed > (this.o.idleCloseMs ?? 10_000))) await this.flushAndClose(l);
    }
  }

  /** Shutdown: no new reservations; waits for the calls in flight to finish (bounded), writes them, closes every lease. */
  async close(deadlineMs = 25_000): Promise<void> {
    for (const l of this.leases.values()) l.retired = true;
    const until = this.now() + deadlineMs;
    while ([...this.leases.values()].some((l) => l.inflight > 0) && this.now() < until) await new Promise((r) => setTimeout(r, 50));
    for (const l of this.leases.values()) this.requeue(l);
    await this.writes.idle();
    for (const l of [...this.leases.values()]) await this.flushAndClose(l);
    for (const t of [this.renewTimer, this.journalTimer, this.retryTimer]) if (t) clearTimeout(t);
    this.renewTimer = this.journalTimer = this.retryTimer = undefined;
  }

  /**
   * The batcher's run: one `write` per lease, carrying its pending open rows and records. An open row whose record
   * is in the same statement is not sent (the record writes the row) and is answered with it. A written call is
   * marked `opened` before it is answered. A lease found closed (a sweeper) retires: its open rows are refused and
   * its finished calls charged directly; a statement that fails (Postgres unreachable) refuses its open rows and
   * puts its finished calls back in their lease's `pending` (a call already recorded is skipped when they are sent
   * again), with a retry scheduled.
   */
  private async write(batch: Array<Pending<LeaseItem, void>>): Promise<void> {
    for (const [l, items] of byLease(batch)) {
      const opens: Array<Pending<LeaseItem & { kind: 'open' }, void>> = [];
      const records: Array<Pending<LeaseItem & { kind: 'record' }, void>> = [];
      for (const p of items) {
        if (p.item.kind === 'open') opens.push(p as Pending<LeaseItem & { kind: 'open' }, void>);
        else records.push(p as Pending<LeaseItem & { kind: 'record' }, void>);
      }
      const recorded = new Set(records.map((p) => p.item.call.id));
      const calls = records.map((p) => p.item.call);
      try {
        const { active } = await this.o.leases.write(
          l.id,
          opens.filter((p) => !recorded.has(p.item.call.id)).map((p) => p.item.call),
          calls,
        );
        if (active) {
          for (const p of opens) {
            p.item.running.opened = true;
            p.resolve();
          }
        } else {
          l.retired = true;
          for (const p of opens) p.reject(new Error(`credit lease ${l.id} is no longer active`));
          // the lease was closed by a sweeper (this edge was cut off too long): charge each call from the balance
          for (const c of calls) await this.chargeDirect(c);
        }
        if (records.length > 0) this.failures = 0;
        for (const p of records) p.resolve();
      } catch (err) {
        for (const p of opens) p.reject(err);
        if (records.length === 0) continue;
        l.pending.push(...calls);
        this.o.logger.error({ err, leaseId: l.id, calls: calls.length }, 'writing chat calls failed; retrying');
        for (const p of records) p.reject(err);
        this.retryLater();
      }
    }
  }

  /** Queues a finished call for the batcher, tracked on its lease until its statement answers it. */
  private record(l: LocalLease, call: LeasedCall): void {
    const written = this.writes.push({ kind: 'record', lease: l, call });
    l.recording.add(written);
    const answered = () => l.recording.delete(written);
    written.then(answered, answered);
  }

  /** Sends the calls a failed batch kept again. */
  private requeue(l: LocalLease): void {
    for (const c of l.pending.splice(0)) this.record(l, c);
  }

  /** After a failed statement carrying records: a flush in 50 ms, doubling per failure in a row, at most the renew interval. */
  private retryLater(): void {
    this.failures++;
    const ms = Math.min(FIRST_RETRY_MS * 2 ** Math.min(this.failures - 1, 16), this.renewEveryMs());
    this.retryTimer ??= setTimeout(() => {
      this.retryTimer = undefined;
      void this.flush();
    }, ms).unref();
  }

  /** Writes the cost so far of running calls that grew since their last journal entry. */
  private async journal(): Promise<void> {
    const updates: Array<{ id: string; costSoFar: bigint; call: RunningCall }> = [];
    for (const l of this.leases.values()) {
      for (const [id, c] of l.running) {
        if (!c.opened) continue;
        const cost = c.live();
        if (cost > c.journalled) updates.push({ id, costSoFar: cost, call: c });
      }
    }
    if (updates.length === 0) {
      if ([...this.leases.values()].every((l) => l.running.size === 0) && this.journalTimer) {
        clearInterval(this.journalTimer);
        this.journalTimer = undefined;
      }
      return;
    }
    try {
      await this.o.leases.journal(updates);
      for (const u of updates) u.call.journalled = u.costSoFar;
    } catch (err) {
      this.o.logger.warn({ err, calls: updates.length }, 'journalling running chat calls failed; retrying');
    }
  }

  /** A replaced lease: its unreserved money is needed now when the balance is small, so it goes back first if nothing runs on it. */
  protected async replace(old: LocalLease): Promise<void> {
    old.retired = true;
    if (old.inflight === 0) await this.flushAndClose(old);
  }

  protected leaseOf(id: string, accountId: string, amount: bigint, at: number): LocalLease {
    return {
      id,
      accountId,
      amount,
      committed: 0n,
      inflight: 0,
      pending: [],
      recording: new Set(),
      closing: undefined,
      running: new Map(),
      lastUsed: at,
      renewedAt: at,
      retired: false,
    };
  }

  private async chargeDirect(c: LeasedCall): Promise<void> {
    try {
      await this.o.calls.open({
        id: c.id,
        accountId: c.accountId,
        apiKeyId: c.apiKeyId,
        model: c.model,
        requestedModel: c.requestedModel,
        request: c.request,
        hold: c.cost,
        priceSnapshot: c.priceSnapshot,
        deadlineAt: new Date(this.now() + 60_000),
      });
      await this.o.calls.settle(c.id, { status: c.status, cost: c.cost, result: c.result, error: c.error, channelId: c.channelId });
    } catch (err) {
      if ((err as { code?: string }).code === '23505') {
        // its row was written before its first byte: the lease's close charged it what it had journalled
        this.o.logger.warn({ taskId: c.id, cost: c.cost.toString() }, 'a chat call was charged its journalled cost when its lease was closed');
        return;
      }
      this.o.logger.error({ err, taskId: c.id, cost: c.cost.toString() }, 'a chat call could not be charged after its lease was closed');
    }
  }

  /** Retires `l` and closes it once its finished calls are written and nothing runs on it (one close at a time). */
  private flushAndClose(l: LocalLease): Promise<void> {
    l.retired = true;
    l.closing ??= this.closeWritten(l).finally(() => (l.closing = undefined));
    return l.closing;
  }

  private async closeWritten(l: LocalLease): Promise<void> {
    this.requeue(l);
    await Promise.allSettled([...l.recording]);
    if (l.pending.length > 0 || l.recording.size > 0 || l.inflight > 0 || !this.leases.has(l.id)) return;
    try {
      await this.o.leases.close(l.id);
      this.leases.delete(l.id);
      if (this.current.get(l.accountId) === l) this.current.delete(l.accountId);
    } catch (err) {
      this.o.logger.warn({ err, leaseId: l.id }, 'closing a credit lease failed; it expires and a sweeper closes it');
    }
  }

  protected async renew(): Promise<void> {
    void this.flush();
    const ids = [...this.leases.keys()];
    if (ids.length === 0) {
      if (this.renewTimer) clearInterval(this.renewTimer);
      this.renewTimer = undefined;
      return;
    }
    try {
      const alive = await this.o.leases.renew(ids, this.o.ttlMs);
      const at = this.now();
      for (const id of ids) {
        const l = this.leases.get(id);
        if (!l) continue;
        if (alive.has(id)) l.renewedAt = at;
        else l.retired = true;
      }
    } catch (err) {
      this.o.logger.warn({ err }, 'renewing credit leases failed');
    }
  }
}
