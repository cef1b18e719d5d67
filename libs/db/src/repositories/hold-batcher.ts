import type { DataSource } from 'typeorm';
import { DomainError, isDependencyUnavailable } from '@gmg/errors';
import { HOLD_LEASED_SQL, HOLD_MANY_SQL, TaskRepository, holdTasks, type NewTask, type TaskRecord } from './task.repository';
import type { IdleLeases, TaskLease, TaskLeaseBook } from './task-lease.book';
import { StatementBatcher, type Pending } from '../statement-batcher';
import { batchFailed, type BatchLogger } from '@gmg/observability';

/** The most holds written by one statement. */
export const MAX_HOLD_BATCH = 100;
/**
 * Hold statements of one edge process in flight at once; the submits arriving meanwhile wait for the next. One:
 * two batches of one edge would share its hot accounts, and the second would skip their rows (HOLD_MANY_SQL never
 * waits on a row lock) and send their tasks one by one.
 */
export const HOLD_STATEMENTS_IN_FLIGHT = 1;

/** Signs of another transaction on an account's row, within a second, that make it a hot account (see `contended`). */
const CONTENDED_SIGNS = 3;

/** Waits before the one-task statement is tried again after a lost connection (see `alone`): ~3 s in all. */
const ALONE_RETRIES_MS = [100, 300, 800, 1800];

/** How long the slot waits for a hold that went alone before it takes the next batch (see `hold`). */
const ALONE_PATIENCE_MS = 50;

interface Hold {
  task: NewTask;
  /** With leases: the lease its price is reserved on. */
  lease?: TaskLease;
}

type Waiting = Pending<Hold, TaskRecord>;

/**
 * The task repository of the edge's submissions, whose holds are written in batches (issue 13.2). One hold per
 * statement costs a round trip and a durable commit each, and the holds of one busy account queue on its row lock
 * in Postgres, each with its own commit. Here at most HOLD_STATEMENTS_IN_FLIGHT hold statement of this process runs
 * at once; the submits that arrive meanwhile wait in the process and go together — of any accounts, up to
 * MAX_HOLD_BATCH — as ONE statement (HOLD_MANY_SQL: per account, its keys' in-flight room and one conditional move
 * of its total gate all its task rows and ledger entries; account rows locked in id order, held ones skipped): one
 * round trip and one commit for the batch. A submit that finds the slot free goes at once, alone, through the
 * one-task statement, so a quiet edge adds no wait; the slot waits for it at most ALONE_PATIENCE_MS.
 *
 * The tasks of an account the batch statement refused (its balance or a key's room) or skipped (its row held by
 * another transaction: the batch never waits for a row lock, so a held account cannot stall the others), and every
 * task of a batch that failed (an Idempotency-Key conflict, a lost connection: nothing of it was written), are
 * retried one by one through the one-task statement, off the batch's slot, so every submit gets exactly the answer
 * it would have got alone — its own payment_required, 429 or duplicate — and the guarantees are the one-task
 * statement's: no overdraft, a task exists only with its hold.
 *
 * Hot accounts (docs/reliability.md, "Hot accounts"): with `leases`, an account whose row another transaction held
 * (its batch skipped it and the one-task retry then got through, or a hold that went alone outwaited
 * ALONE_PATIENCE_MS) — another edge holding for it at the same time — is held from this edge's credit lease for as
 * long as its submits keep coming (`leaseWhen: 'always'`: every account). Its tasks then go through the journal
 * statement (HOLD_LEASED_SQL), which touches this edge's lease row and never the account row, in the same slot.
 */
export class HoldBatchingTaskRepository extends TaskRepository {
  /** The statement slots: the waiting submits, a batch at a time (`hold`). */
  private readonly batcher: StatementBatcher<Hold, TaskRecord>;
  private readonly sql: string;
  private readonly leasedSql: string;
  private readonly leases: TaskLeaseBook | undefined;
  private readonly idle: IdleLeases | undefined;
  private readonly leaseAll: boolean;
  /** Accounts held from leases, until when (ms): renewed by each of their submits. */
  private readonly hot = new Map<string, number>();
  private readonly hotMs: number;
  /** Signs of contention per account not yet hot: how many since when. */
  private readonly signs = new Map<string, { since: number; n: number }>();
  private readonly logger: BatchLogger | undefined;

  /**
   * `opts.sql` / `opts.leasedSql`: the batch and journal statements (default HOLD_MANY_SQL and HOLD_LEASED_SQL; the
   * mutation tests pass broken ones). `opts.leases`: this edge's task-hold leases; `leaseWhen` (default
   * 'contended') which accounts use them; `hotMs` (default 5 s) how long an account stays leased after its last
   * submit. `logger`: where a failed batch statement is told (it is counted in gmg_batch_errors_total either way).
   * `idle`: this edge's other lease book (chat calls), asked for the account's idle leased money before a 402.
   */
  constructor(
    ds: Pick<DataSource, 'query'>,
    opts: {
      maxBatch?: number;
      maxInFlight?: number;
      sql?: string;
      leasedSql?: string;
      leases?: TaskLeaseBook;
      idle?: IdleLeases;
      leaseWhen?: 'always' | 'contended';
      hotMs?: number;
      logger?: BatchLogger;
    } = {},
  ) {
    super(ds);
    this.batcher = new StatementBatcher((batch) => this.hold(batch), {
      maxBatch: opts.maxBatch ?? MAX_HOLD_BATCH,
      slots: opts.maxInFlight ?? HOLD_STATEMENTS_IN_FLIGHT,
    });
    this.sql = opts.sql ?? HOLD_MANY_SQL;
    this.leasedSql = opts.leasedSql ?? HOLD_LEASED_SQL;
    this.leases = opts.leases;
    this.idle = opts.idle;
    this.leaseAll = opts.leaseWhen === 'always';
    this.hotMs = opts.hotMs ?? 5000;
    this.logger = opts.logger;
  }

  /**
   * Several holds in one statement (HOLD_MANY_SQL): the same steps as `createWithHold` for every task, all or nothing
   * per account, with one commit for the batch. Returns the tasks written, by id; the tasks of an account its room or
   * balance refused, or whose row another transaction held, are missing (nothing of that account was written). An
   * error (an Idempotency-Key conflict, a lost connection) leaves nothing written at all.
   */
  async createManyWithHold(ts: readonly NewTask[]): Promise<Map<string, TaskRecord>> {
    return (
      await holdTasks(
        this.ds,
        ts.map((task) => ({ task })),
        this.sql,
      )
    ).tasks;
  }

  override async createWithHold(task: NewTask): Promise<TaskRecord> {
    try {
      return await this.holdOnce(task);
    } catch (e) {
      // refused for money (nothing was written) while this edge's chat calls may hold the account's money idle in a
      // lease: given back, the hold is tried once more — the 402 only when the account is short indeed
      if (!(e instanceof DomainError && e.code === 'payment_required') || !(await this.idle?.returnIdle(task.accountId))) throw e;
      return this.holdOnce(task);
    }
  }

  private async holdOnce(task: NewTask): Promise<TaskRecord> {
    // an avatar batch's asset rows are written by the one-task statement only, on the account row as before
    if (task.avatarBatch) return this.alone(task);
    let lease: TaskLease | undefined;
    if (this.leases && this.isHot(task.accountId)) {
      // no lease can cover it (the balance is short, or Postgres refused the grant): the account row answers exactly
      lease = (await this.leases.reserve(task.accountId, task.price)) ?? undefined;
      if (!lease) return this.alone(task);
    }
    return this.batcher.push({ task, lease });
  }

  private isHot(accountId: string): boolean {
    if (this.leaseAll) return true;
    const until = this.hot.get(accountId);
    if (until === undefined) return false;
    if (until < Date.now()) {
      this.hot.delete(accountId);
      return false;
    }
    this.hot.set(accountId, Date.now() + this.hotMs);
    return true;
  }

  /**
   * Another transaction held this account's row while this edge wanted it. CONTENDED_SIGNS such times within a
   * second — another edge holding for it, not one slow statement of this edge — and it is leased from now on.
   */
  private contended(accountId: string): void {
    if (!this.leases || this.hot.has(accountId)) return;
    const now = Date.now();
    const seen = this.signs.get(accountId);
    const n = seen && now - seen.since < 1000 ? seen.n + 1 : 1;
    if (n >= CONTENDED_SIGNS) {
      this.signs.delete(accountId);
      // bounded: past this many hot accounts, the expired ones go (a live one is marked again at its next contention)
      if (this.hot.size > 10_000) for (const [id, until] of this.hot) if (until < now) this.hot.delete(id);
      this.hot.set(accountId, now + this.hotMs);
    } else {
      this.signs.set(accountId, { since: n === 1 ? now : seen!.since, n });
    }
    // bounded: a sign older than a second is worth nothing
    if (this.signs.size > 10_000) this.signs.clear();
  }

  /**
   * The one-task statement. A task that is already there was written by a batch statement whose answer was lost (a
   * connection cut after the commit): that task, held once, is the answer — the statement, refused by the task's
   * primary key, held nothing.
   */
  private async alone(task: NewTask): Promise<TaskRecord> {
    // A lost connection leaves the outcome unknown: the commit may have gone through with its answer lost (a pooler
    // or Postgres restart). The statement is tried again with the same task id (bounded): it finds the task written
    // (or waits on the first statement's locks, then finds it) or holds it now — held once either way, so a submit
    // answered 503 leaves no task behind (CHAOS_PGBOUNCER=1 npm run chaos, "PgBouncer restarted mid-flight").
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.aloneOnce(task);
      } catch (e) {
        if (attempt > 0) {
          // a retry's refusal (402, 429) can be the first statement's own doing: it committed, took the balance or
          // the in-flight room, and its answer was lost. The task is there: that is the answer (held once).
          const written = await this.get(task.id).catch(() => null);
          if (written && written.accountId === task.accountId) return written;
        }
        if (!isDependencyUnavailable(e) || attempt >= ALONE_RETRIES_MS.length) throw e;
        await new Promise((r) => setTimeout(r, ALONE_RETRIES_MS[attempt]));
      }
    }
  }

  private async aloneOnce(task: NewTask): Promise<TaskRecord> {
    try {
      return await super.createWithHold(task);
    } catch (e) {
      if ((e as { driverError?: { constraint?: string } }).driverError?.constraint !== 'tasks_pkey') throw e;
      const written = await this.get(task.id);
      if (!written || written.accountId !== task.accountId) throw e;
      return written;
    }
  }

  private async hold(all: Waiting[]): Promise<void> {
    const leased = all.filter((w) => w.item.lease);
    if (leased.length > 0) await this.holdLeased(leased, this.leases!);
    const batch = all.filter((w) => !w.item.lease);
    if (batch.length === 0) return;
    if (batch.length === 1) {
      // Alone (a quiet edge): the one-task statement, which waits for a held row instead of skipping it. The slot
      // waits for it — the next submits gather meanwhile — but at most ALONE_PATIENCE_MS: a hold that waits for a
      // row another transaction holds must not hold up everyone else's.
      const w = batch[0]!;
      let timer: NodeJS.Timeout | undefined;
      let outwaited = false;
      const patience = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          outwaited = true;
          resolve();
        }, ALONE_PATIENCE_MS);
      });
      await Promise.race([
        this.alone(w.item.task).then((rec) => {
          if (outwaited) this.contended(w.item.task.accountId);
          w.resolve(rec);
        }, w.reject),
        patience,
      ]);
      clearTimeout(timer);
      return;
    }
    const made = await this.createManyWithHold(batch.map((w) => w.item.task)).catch((e: unknown) => {
      batchFailed(this.logger, 'hold', e, { tasks: batch.length }, 'a hold batch failed; its tasks are held one by one');
      return new Map<string, TaskRecord>();
    });
    for (const w of batch) {
      const rec = made.get(w.item.task.id);
      if (rec) w.resolve(rec);
      // Refused, skipped or failed in the batch: alone through the one-task statement, with its own answer, off the
      // slot — a retry that waits for a held account row never holds up the next batch. Held alone after the batch
      // left it out: its row was held by another transaction (or the batch failed), the mark of a contended account.
      else
        void this.alone(w.item.task).then((r) => {
          this.contended(w.item.task.accountId);
          w.resolve(r);
        }, w.reject);
    }
  }

  /**
   * Leased: every batch, even of one, is the journal statement (no account row, so nothing to wait for). A task it
   * refused (its lease closed by a sweeper or short, a key without room) or an error (nothing written, or everything
   * with the answer lost) goes alone, off the slot, through the one-task statement: its own answer, held once.
   */
  private async holdLeased(batch: Waiting[], leases: TaskLeaseBook): Promise<void> {
    const made = await holdTasks(
      this.ds,
      batch.map((w) => ({ task: w.item.task, leaseId: w.item.lease!.id })),
      this.leasedSql,
    ).then(
      (held) => held.tasks,
      (e: unknown) => {
        batchFailed(this.logger, 'hold_leased', e, { tasks: batch.length }, 'a leased hold batch failed; its tasks are held one by one');
        return new Map<string, TaskRecord>();
      },
    );
    for (const w of batch) {
      const rec = made.get(w.item.task.id);
      leases.done(w.item.lease!, w.item.task.price, rec !== undefined);
      if (rec) w.resolve(rec);
      else void this.alone(w.item.task).then(w.resolve, w.reject);
    }
  }
}
