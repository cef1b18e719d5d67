import { randomBytes } from 'node:crypto';
import type { ChatCallRepository, CreditLeaseRepository, LeasedCall } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';

/**
 * The edge's side of credit leases (docs/messages.md): money held in Postgres per account as a lease, spent here
 * in memory, so a chat call has no Postgres round trip before its first byte. Invariants kept locally:
 * - a call reserves the most it can cost from its account's lease, and only while `reserved ≤ amount`;
 * - a finished call costs at most its reservation; the unused part goes back to the lease at once;
 * - finished calls are written in batches (task row + capture, once: `record` skips a call already written);
 * - a lease no longer renewed (this edge died or lost Postgres) is closed by any sweeper, which releases what
 *   it did not record; a batch that finds its lease closed charges its calls directly from the balance.
 */
export interface CreditLeaseBookOptions {
  leases: Pick<CreditLeaseRepository, 'grant' | 'record' | 'renew' | 'close'>;
  calls: Pick<ChatCallRepository, 'open' | 'settle'>;
  logger: Logger;
  /** What a lease asks for (it gets less when the balance is smaller, never less than the call needs). */
  targetMinor: bigint;
  /** A lease expires this long after its last renewal; renewed every third of it while in use. */
  ttlMs: number;
  /** Finished calls are written at most this long after they finish. */
  flushDelayMs?: number;
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
  lastUsed: number;
  renewedAt: number;
  /** No new reservations: replaced by a newer lease, idle, or closed by a sweeper. */
  retired: boolean;
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

  /** A call is over: its cost (≤ its reservation) is queued for the next batch, the rest is free again. */
  finish(r: Reservation, call: Omit<LeasedCall, 'reserved'>): void {
    const cost = call.cost < r.amount ? call.cost : r.amount;
    r.lease.committed -= r.amount - cost;
    r.lease.inflight--;
    r.lease.pending.push({ ...call, reserved: r.amount, cost });
    this.flushTimer ??= setTimeout(() => void this.flush(), this.o.flushDelayMs ?? 20).unref();
  }

  /** Writes every pending call, then closes the leases that are retired and idle. */
  flush(): Promise<void> {
    this.flushTimer = undefined;
    this.flushing ??= this.flushAll().finally(() => {
      this.flushing = undefined;
      if ([...this.leases.values()].some((l) => l.pending.length > 0)) this.flushTimer ??= setTimeout(() => void this.flush(), this.o.flushDelayMs ?? 20).unref();
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
    const l: LocalLease = { id, accountId, amount: g.amount, committed: 0n, inflight: 0, pending: [], lastUsed: this.now(), renewedAt: this.now(), retired: false };
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
        id: c.id, accountId: c.accountId, apiKeyId: c.apiKeyId, model: c.model, requestedModel: c.requestedModel, request: c.request,
        hold: c.cost, priceSnapshot: c.priceSnapshot, deadlineAt: new Date(this.now() + 60_000),
      });
      await this.o.calls.settle(c.id, { status: c.status, cost: c.cost, result: c.result, error: c.error, channelId: c.channelId });
    } catch (err) {
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
