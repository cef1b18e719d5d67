import { randomBytes } from 'node:crypto';
import type { ChatCallRepository, CreditLeaseRepository, LeasedCall, OpenedCall } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';

/**
 * The edge's side of credit leases (docs/messages.md): money held in Postgres per account as a lease, spent here
 * in memory, so a chat call has no Postgres round trip before its first byte. Invariants kept locally:
 * - a call reserves the most it can cost from its account's lease, and only while `reserved ≤ amount`;
 * - a finished call costs at most its reservation; the unused part goes back to the lease at once;
 * - a call's row is written (batched) before its first byte reaches the client, and its cost so far journalled
 *   every `journalMs` while it runs: closing the lease (a sweeper, after this edge died) charges it that much;
 * - finished calls are written in batches (task row + capture, once: `record` skips a call already ended);
 * - a lease no longer renewed (this edge died or lost Postgres) is closed by any sweeper, which releases what
 *   it did not record; a batch that finds its lease closed charges its calls directly from the balance.
 */
export interface CreditLeaseBookOptions {
  leases: Pick<CreditLeaseRepository, 'grant' | 'record' | 'renew' | 'close' | 'openCalls' | 'journal'>;
  calls: Pick<ChatCallRepository, 'open' | 'settle'>;
  logger: Logger;
  /** What a lease asks for (it gets less when the balance is smaller, never less than the call needs). */
  targetMinor: bigint;
  /** A lease expires this long after its last renewal; renewed every third of it while in use. */
  ttlMs: number;
  /** Finished calls are written at most this long after they finish. */
  flushDelayMs?: number;
  /** The cost so far of running calls is journalled this often (what a crash of this edge charges them). */
  journalMs?: number;
  /** A lease unused this long is closed (its money back to the account). */
  idleCloseMs?: number;
  now?: () => number;
}

interface LocalLease {
  id: string;
  accountId: string;
  amount: bigint;
  /** Reservations of calls in flight + costs of finished calls (recorded or pending). */
  committed: bigint;
  inflight: number;
  pending: LeasedCall[];
  /** Calls started and not yet written (they wait for the next open batch). */
  opening: Array<{ call: OpenedCall; settle: (err?: Error) => void }>;
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

export interface Reservation {
  readonly lease: LocalLease;
  readonly amount: bigint;
}

export class CreditLeaseBook {
  readonly edgeId = `edge_${randomBytes(6).toString('hex')}`;
  private readonly current = new Map<string, LocalLease>();
  private readonly leases = new Map<string, LocalLease>();
  private readonly granting = new Map<string, Promise<boolean>>();
  private flushTimer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private opening: Promise<void> | undefined;
  private openTimer: NodeJS.Immediate | undefined;
  private journalTimer: NodeJS.Timeout | undefined;
  private readonly now: () => number;

  constructor(private readonly o: CreditLeaseBookOptions) {
    this.now = o.now ?? Date.now;
  }

  /** Reserves `amount` for one call; a lease is granted first when the account has none with room (402 when the balance cannot cover it). */
  async reserve(accountId: string, amount: bigint): Promise<Reservation> {
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
    throw new DomainError('payment_required', 'Insufficient balance for this request');
  }

  /**
   * A call has started: its row is written with the next open batch (one statement for every call started
   * meanwhile). `durable` resolves once it is written; the first byte of its answer waits for it. `live` is
   * its cost so far, journalled while it runs.
   */
  open(r: Reservation, call: Omit<OpenedCall, 'reserved'>, live: () => bigint): { durable: Promise<void> } {
    const l = r.lease;
    const running: RunningCall = { live, journalled: 0n, opened: false };
    l.running.set(call.id, running);
    const durable = new Promise<void>((resolve, reject) => {
      l.opening.push({
        call: { ...call, reserved: r.amount },
        settle: (err) => {
          if (err) reject(err);
          else {
            running.opened = true;
            resolve();
          }
        },
      });
    });
    // a call that ends before its first byte never awaits it
    durable.catch(() => undefined);
    this.openTimer ??= setImmediate(() => void this.writeOpens());
    this.journalTimer ??= setInterval(() => void this.journal(), this.o.journalMs ?? 1000).unref();
    return { durable };
  }

  /** A call is over: its cost (≤ its reservation) is queued for the next batch, the rest is free again. */
  finish(r: Reservation, call: Omit<LeasedCall, 'reserved'>): void {
    const cost = call.cost < r.amount ? call.cost : r.amount;
    r.lease.committed -= r.amount - cost;
    r.lease.inflight--;
    r.lease.running.delete(call.id);
    r.lease.pending.push({ ...call, reserved: r.amount, cost });
    this.flushTimer ??= setTimeout(() => void this.flush(), this.o.flushDelayMs ?? 20).unref();
  }

  /** Writes every pending call, then closes the leases that are retired and idle. */
  flush(): Promise<void> {
    this.flushTimer = undefined;
    this.flushing ??= this.flushAll().finally(() => {
      this.flushing = undefined;
      if ([...this.leases.values()].some((l) => l.pending.length > 0))
        this.flushTimer ??= setTimeout(() => void this.flush(), this.o.flushDelayMs ?? 20).unref();
    });
    return this.flushing;
  }

  /** Shutdown: no new reservations; waits for the calls in flight to finish (bounded), writes them, closes every lease. */
  async close(deadlineMs = 25_000): Promise<void> {
    for (const l of this.leases.values()) l.retired = true;
    const until = this.now() + deadlineMs;
    while ([...this.leases.values()].some((l) => l.inflight > 0) && this.now() < until) await new Promise((r) => setTimeout(r, 50));
    await this.flush();
    await this.flushing;
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.renewTimer = undefined;
    if (this.journalTimer) clearInterval(this.journalTimer);
    this.journalTimer = undefined;
  }

  /** One open batch at a time; calls started while it is written go in the next one. */
  private writeOpens(): Promise<void> {
    this.openTimer = undefined;
    this.opening ??= (async () => {
      for (const l of [...this.leases.values()]) {
        const batch = l.opening.splice(0);
        if (batch.length === 0) continue;
        try {
          if (
            await this.o.leases.openCalls(
              l.id,
              batch.map((b) => b.call),
            )
          ) {
            for (const b of batch) b.settle();
            continue;
          }
          l.retired = true;
          for (const b of batch) b.settle(new Error(`credit lease ${l.id} is no longer active`));
        } catch (err) {
          for (const b of batch) b.settle(err as Error);
        }
      }
    })().finally(() => {
      this.opening = undefined;
      if ([...this.leases.values()].some((l) => l.opening.length > 0)) this.openTimer ??= setImmediate(() => void this.writeOpens());
    });
    return this.opening;
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

  /** A lease is used only while surely alive: renewed within the last two thirds of its life. */
  private fresh(l: LocalLease): boolean {
    return this.now() - l.renewedAt < (this.o.ttlMs * 2) / 3;
  }

  private grantFor(accountId: string, need: bigint): Promise<boolean> {
    let p = this.granting.get(accountId);
    if (!p) {
      p = this.grant(accountId, need).finally(() => this.granting.delete(accountId));
      this.granting.set(accountId, p);
    }
    return p;
  }

  private async grant(accountId: string, need: bigint): Promise<boolean> {
    const old = this.current.get(accountId);
    if (old) {
      old.retired = true;
      // its unreserved money is needed now when the balance is small: give it back first if nothing runs on it
      if (old.inflight === 0) await this.flushAndClose(old);
    }
    const id = `lease_${randomBytes(12).toString('hex')}`;
    const want = this.o.targetMinor > need ? this.o.targetMinor : need;
    const g = await this.o.leases.grant({ id, accountId, edgeId: this.edgeId, min: need, want, ttlMs: this.o.ttlMs });
    if (!g) return false;
    const l: LocalLease = {
      id,
      accountId,
      amount: g.amount,
      committed: 0n,
      inflight: 0,
      pending: [],
      opening: [],
      running: new Map(),
      lastUsed: this.now(),
      renewedAt: this.now(),
      retired: false,
    };
    this.current.set(accountId, l);
    this.leases.set(id, l);
    this.renewTimer ??= setInterval(() => void this.renew(), Math.max(50, Math.floor(this.o.ttlMs / 3))).unref();
    return true;
  }

  private async flushAll(): Promise<void> {
    for (const l of [...this.leases.values()]) {
      if (l.pending.length > 0) await this.write(l);
      if (l.inflight === 0 && l.pending.length === 0 && (l.retired || this.now() - l.lastUsed > (this.o.idleCloseMs ?? 10_000))) await this.flushAndClose(l);
    }
  }

  private async write(l: LocalLease): Promise<void> {
    const batch = l.pending.splice(0);
    try {
      if (await this.o.leases.record(l.id, batch)) return;
      // the lease was closed by a sweeper (this edge was cut off too long): charge each call from the balance
      l.retired = true;
      for (const c of batch) await this.chargeDirect(c);
    } catch (err) {
      // Postgres unreachable: keep the batch for the next flush (a call already recorded is skipped then)
      l.pending.unshift(...batch);
      this.o.logger.error({ err, leaseId: l.id, calls: batch.length }, 'writing chat calls failed; retrying');
    }
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

  private async flushAndClose(l: LocalLease): Promise<void> {
    l.retired = true;
    if (l.pending.length > 0) await this.write(l);
    if (l.pending.length > 0 || l.inflight > 0) return;
    try {
      await this.o.leases.close(l.id);
      this.leases.delete(l.id);
      if (this.current.get(l.accountId) === l) this.current.delete(l.accountId);
    } catch (err) {
      this.o.logger.warn({ err, leaseId: l.id }, 'closing a credit lease failed; it expires and a sweeper closes it');
    }
  }

  private async renew(): Promise<void> {
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
