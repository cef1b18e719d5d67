import type { CreditLeaseRepository } from './credit-lease.repository';
import { LeaseBookCore } from './lease-book.core';
import { batchFailed, type BatchLogger } from '@gmg/observability';

/** How an edge sizes and keeps its task-hold leases (docs/configuration.md: TASK_LEASE_*). */
export interface TaskLeaseOptions {
  /** What a lease asks for; it gets less when the balance is smaller, never less than the task needs. */
  targetMinor: bigint;
  /** A lease expires this long after its last renewal; renewed every third of it while held. */
  ttlMs: number;
  /** A lease no task used for this long is closed (its money back to the account). */
  idleCloseMs: number;
  now?: () => number;
  /** Where a failed renewal or close is told (counted in gmg_batch_errors_total either way). */
  logger?: BatchLogger;
}

/**
 * A lease book of this edge as another book sees it: the account's money it holds idle (leased, nothing running or
 * being written on it) given back on request, so the other book's request is not refused while this edge holds the
 * money (task holds and chat calls of one account: docs/messages.md). True when some lease of the account was given
 * back (or was being closed).
 */
export interface IdleLeases {
  returnIdle(accountId: string): Promise<boolean>;
}

/** One lease as this edge sees it. */
export interface TaskLease {
  readonly id: string;
  readonly accountId: string;
  readonly amount: bigint;
  /** Prices of the tasks reserved on it: written, or in a journal statement not yet answered. Never above `amount`. */
  committed: bigint;
  /** Reserved tasks whose journal statement has not answered yet: the lease is not closed while any is left. */
  writing: number;
  lastUsed: number;
  renewedAt: number;
  /** Takes no new task: exhausted, idle, closed by a sweeper, or shutting down. */
  retired: boolean;
}

/**
 * The edge's side of task-hold leases (docs/reliability.md, "Hot accounts"): per account, money held once in
 * Postgres as a credit lease (the same `credit_leases` rows, grant, renew, close and sweeper as the messages path),
 * spent here in memory; each task reserved on it is written by the journal statement (HOLD_LEASED_SQL, task.repository.ts),
 * which touches the edge's own lease row, never the account row. Invariants kept locally (Postgres re-checks each
 * one in the journal, so a wrong local view costs a fallback, never money):
 * - a reservation only while `committed + price ≤ amount`, the lease is not retired and surely alive (renewed within
 *   the last two thirds of its life);
 * - a lease is closed only when no reservation on it waits for its journal (`writing = 0`);
 * - `reserve` answers null when no lease can cover the task, after giving back this edge's idle leases of the
 *   account: the caller then holds the task directly on the account row, which answers exactly (402 or the hold).
 */
export class TaskLeaseBook extends LeaseBookCore<TaskLease> implements IdleLeases {
  /** Waiters for a retired lease's close, by lease id (resolved once it is closed or its close was tried). */
  private readonly closing = new Map<string, Array<() => void>>();
  /** Closes under way (the lease already left `leases`), by lease id: a refusal waits for them too. */
  private readonly closes = new Map<string, { accountId: string; done: Promise<void> }>();
  private closed = false;

  constructor(
    private readonly repo: Pick<CreditLeaseRepository, 'grant' | 'renew' | 'close'>,
    private readonly o: TaskLeaseOptions,
  ) {
    super(repo, o);
  }

  /** Reserves `price` on the account's lease (granting one when none has room); null: hold it directly. */
  async reserve(accountId: string, price: bigint): Promise<TaskLease | null> {
    // every successful grant lets at least one waiting task through, so this ends; the bound is a safety net
    for (let attempt = 0; attempt < 100 && !this.closed; attempt++) {
      const l = this.current.get(accountId);
      if (l && !l.retired && this.fresh(l) && l.amount - l.committed >= price) {
        l.committed += price;
        l.writing++;
        l.lastUsed = this.now();
        return l;
      }
      if (!(await this.grantFor(accountId, price))) break;
    }
    // every lease of this edge for the account gives its rest back first, those still being closed included (a
    // close started by the last `done` of another task, which left `leases` before its statement answered)
    await Promise.all([
      ...[...this.leases.values()].filter((l) => l.accountId === accountId).map((l) => this.retired(l)),
      ...[...this.closes.values()].filter((c) => c.accountId === accountId).map((c) => c.done),
    ]);
    return null;
  }

  /** The journal answered for one reservation: `written`, or refused (its price is free again and the lease retires). */
  done(l: TaskLease, price: bigint, written: boolean): void {
    l.writing--;
    if (!written) {
      l.committed -= price;
      // refused: closed by a sweeper, short in Postgres, or a key without room — a fresh lease is granted next
      l.retired = true;
    }
    if (l.retired && l.writing === 0) void this.retire(l);
  }

  /** IdleLeases: the account's leases no journal statement counts on, closed (their rest back on the account). */
  async returnIdle(accountId: string): Promise<boolean> {
    const idle = [...this.leases.values()].filter((l) => l.accountId === accountId && l.writing === 0);
    const closing = [...this.closes.values()].filter((c) => c.accountId === accountId);
    await Promise.all([...idle.map((l) => this.retire(l)), ...closing.map((c) => c.done)]);
    return idle.length + closing.length > 0;
  }

  /** Shutdown (and tests): no new reservations; every lease closed once its journal has answered. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.renewTimer = undefined;
    await Promise.all([...this.leases.values()].map((l) => this.retire(l)));
  }

  /** Stops renewing without closing anything: the leases expire as if this process had died (crash tests). */
  abandon(): void {
    this.closed = true;
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.renewTimer = undefined;
  }

  /** An exhausted lease gives its rest back first: when the balance is small that rest is what the next lease needs. */
  protected replace(old: TaskLease): Promise<void> {
    return this.retire(old);
  }

  protected leaseOf(id: string, accountId: string, amount: bigint, at: number): TaskLease {
    return { id, accountId, amount, committed: 0n, writing: 0, lastUsed: at, renewedAt: at, retired: false };
  }

  /** No new reservations; closed now when no journal statement still counts on it (else by the last `done`). */
  private async retire(l: TaskLease): Promise<void> {
    l.retired = true;
    if (this.current.get(l.accountId) === l) this.current.delete(l.accountId);
    if (l.writing > 0) return;
    if (!this.leases.has(l.id)) return this.closes.get(l.id)?.done;
    this.leases.delete(l.id);
    // a failed close leaves the lease to expire; any edge's sweeper closes it then (ChatCallSweeper)
    const done = this.repo.close(l.id).then(
      () => undefined,
      (e: unknown) => batchFailed(this.o.logger, 'lease_close', e, { leaseId: l.id }, 'closing a task lease failed; it expires and a sweeper closes it'),
    );
    this.closes.set(l.id, { accountId: l.accountId, done });
    await done;
    this.closes.delete(l.id);
    for (const resolve of this.closing.get(l.id) ?? []) resolve();
    this.closing.delete(l.id);
  }

  /** Retires the lease and resolves once its rest is back on the account (after its journal statements answered). */
  private retired(l: TaskLease): Promise<void> {
    if (l.writing === 0) return this.retire(l);
    l.retired = true;
    if (this.current.get(l.accountId) === l) this.current.delete(l.accountId);
    return new Promise<void>((resolve) => this.closing.set(l.id, [...(this.closing.get(l.id) ?? []), resolve]));
  }

  protected async renew(): Promise<void> {
    const at = this.now();
    for (const l of this.leases.values()) if (l.writing === 0 && at - l.lastUsed > this.o.idleCloseMs) void this.retire(l);
    const ids = [...this.leases.keys()];
    if (ids.length === 0) {
      if (this.renewTimer) clearInterval(this.renewTimer);
      this.renewTimer = undefined;
      return;
    }
    const alive = await this.repo.renew(ids, this.o.ttlMs).catch((e: unknown) => {
      batchFailed(this.o.logger, 'lease_renew', e, { leases: ids.length }, 'renewing task leases failed; they go stale until the next renewal');
      return null;
    });
    if (!alive) return; // Postgres unreachable: the leases go stale (no reservations) and expire
    for (const id of ids) {
      const l = this.leases.get(id);
      if (!l) continue;
      if (alive.has(id)) l.renewedAt = at;
      else void this.retire(l);
    }
  }
}
