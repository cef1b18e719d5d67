import { randomBytes } from 'node:crypto';
import type { CreditLeaseRepository } from './credit-lease.repository';

/** What the core needs of a lease; each book's lease carries its own counters besides. */
export interface BookLease {
  readonly id: string;
  readonly accountId: string;
  renewedAt: number;
  /** Takes no new reservation. */
  retired: boolean;
}

/** The core's options: how a lease is asked for and kept alive. */
export interface LeaseBookCoreOptions {
  /** What a lease asks for (it gets less when the balance is smaller, never less than what is needed now). */
  targetMinor: bigint;
  /** A lease expires this long after its last renewal; renewed every third of it while held. */
  ttlMs: number;
  now?: () => number;
}

/**
 * The part of an edge's lease book that both books share (the task-hold book, TaskLeaseBook, and the chat calls'
 * CreditLeaseBook of api-edge): the account's current lease and every lease held, "surely alive" (renewed within
 * the last two thirds of its life), one grant in flight per account, and the grant itself. What differs is the
 * policy, given by the subclass: how a replaced lease is given back before the grant (`replace`), what a new
 * lease carries (`leaseOf`), and the renewal (`renew`, every third of the TTL while a lease is held).
 */
export abstract class LeaseBookCore<L extends BookLease> {
  readonly edgeId = `edge_${randomBytes(6).toString('hex')}`;
  /** The lease new reservations of an account go to. */
  protected readonly current = new Map<string, L>();
  /** Every lease this edge holds, by id. */
  protected readonly leases = new Map<string, L>();
  protected renewTimer: NodeJS.Timeout | undefined;
  protected readonly now: () => number;
  private readonly granting = new Map<string, Promise<boolean>>();

  protected constructor(
    private readonly grants: Pick<CreditLeaseRepository, 'grant'>,
    private readonly core: LeaseBookCoreOptions,
  ) {
    this.now = core.now ?? Date.now;
  }

  /** The old lease of an account, replaced: retired, and given back first if the policy wants its rest now. */
  protected abstract replace(old: L): Promise<void>;
  /** A new lease as this book keeps it (`at`: now). */
  protected abstract leaseOf(id: string, accountId: string, amount: bigint, at: number): L;
  /** The renewal tick (started by the first grant; the book stops it when nothing is held). */
  protected abstract renew(): Promise<void>;

  /** How often a held lease is renewed: a third of its TTL (at least 50 ms). */
  protected renewEveryMs(): number {
    return Math.max(50, Math.floor(this.core.ttlMs / 3));
  }

  /** A lease is used only while surely alive: renewed within the last two thirds of its life. */
  protected fresh(l: L): boolean {
    return this.now() - l.renewedAt < (this.core.ttlMs * 2) / 3;
  }

  /** A new lease of at least `need` for the account; the callers waiting at once share one grant. False: refused. */
  protected grantFor(accountId: string, need: bigint): Promise<boolean> {
    let p = this.granting.get(accountId);
    if (!p) {
      p = this.grant(accountId, need).finally(() => this.granting.delete(accountId));
      this.granting.set(accountId, p);
    }
    return p;
  }

  private async grant(accountId: string, need: bigint): Promise<boolean> {
    const old = this.current.get(accountId);
    if (old) await this.replace(old);
    const id = `lease_${randomBytes(12).toString('hex')}`;
    const want = this.core.targetMinor > need ? this.core.targetMinor : need;
    const g = await this.grants.grant({ id, accountId, edgeId: this.edgeId, min: need, want, ttlMs: this.core.ttlMs });
    if (!g) return false;
    const l = this.leaseOf(id, accountId, g.amount, this.now());
    this.current.set(accountId, l);
    this.leases.set(id, l);
    this.renewTimer ??= setInterval(() => void this.renew(), this.renewEveryMs()).unref();
    return true;
  }
}
