import type { DataSource, EntityManager } from 'typeorm';
import { rowsOf } from './sql';

/** Rows one retention statement moves or deletes (a short transaction; the sweep runs several per beat). */
export const RETENTION_BATCH = 1000;
/**
 * How long one sweep keeps going while its batches come back full (per table, the three tables at once): the rate
 * is what Postgres does in that time, not a fixed count (it was 10 batches a beat: 667 rows/s at a 15 s beat, below
 * 10 M tasks a day once chat calls count). Below the default beat (SWEEP_INTERVAL_MS 15 s), so sweeps do not pile up.
 */
export const RETENTION_SWEEP_BUDGET_MS = 10_000;
/** A hard bound on batches per table and sweep, whatever the clock says. */
const RETENTION_MAX_BATCHES = 1000;

export interface RetentionPolicy {
  /** Ended, settled tasks older than this many days go to `tasks_archive`; 0: kept forever. */
  taskDays: number;
  /** Webhook delivery records older than this many days are deleted; 0: kept forever. */
  webhookDeliveryDays: number;
  /**
   * Ledger entries of no task (top-ups, adjustments) and of closed credit leases older than this many days move to
   * `ledger_archive`; 0: kept in `ledger_entries`. A task's own entries move with the task (taskDays).
   */
  ledgerDays: number;
  /**
   * Concurrent drains per table within one sweep (RETENTION_PARALLEL, default 1). Safe at any number, here or across
   * replicas: each batch picks its rows FOR UPDATE SKIP LOCKED, so two drains never take the same row.
   */
  parallel?: number;
}

/** Copies the chosen entries into `ledger_archive`, then deletes them: the append-only trigger lets a DELETE through
 *  only for a row already archived, so the copy must come first (a later statement of the same transaction). */
async function moveLedgerEntries(m: EntityManager, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  await m.query(
    `INSERT INTO ledger_archive (id, account_id, task_id, kind, amount, meta, created_at)
     SELECT id, account_id, task_id, kind, amount, meta, created_at FROM ledger_entries WHERE id = ANY($1::bigint[])
     ON CONFLICT (id) DO NOTHING`,
    [ids],
  );
  return rowsOf(await m.query(`DELETE FROM ledger_entries WHERE id = ANY($1::bigint[]) RETURNING id`, [ids])).length;
}

/**
 * Tables that stay small (docs/operations.md, "Retention"). Each statement is one bounded batch, oldest first along
 * an index, and skips rows another transaction holds: safe to run from every billing replica at once (the sweep is
 * one BullMQ repeatable job, so in practice one runs at a time).
 * - tasks: settled (so ended: completed or failed), `completed_at` older than the retention → `tasks_archive` (the
 *   whole row as jsonb), and its ledger entries → `ledger_archive`, in one transaction; a task an avatar asset names
 *   stays (its asset refers to it). Open or unsettled tasks never move.
 * - ledger_entries: kept, never deleted — a task's entries leave with their task (above); entries of no task and of
 *   closed credit leases leave for `ledger_archive` after their own retention. Balances and `ledger_totals` never
 *   change: an account's balance is the sum of its entries in both tables.
 * - webhook_deliveries: the delivery log older than its retention is deleted (a task that old sends no webhook).
 */
export class RetentionRepository {
  constructor(private readonly ds: Pick<DataSource, 'query' | 'transaction'>) {}

  /**
   * Moves up to `limit` ended, settled tasks whose `completed_at` is older than `days` days, with their ledger
   * entries; returns how many tasks.
   */
  async archiveTasks(days: number, limit = RETENTION_BATCH): Promise<number> {
    return this.ds.transaction(async (m) => {
      const ids = await this.moveTasks(m, days, limit);
      if (ids.length) {
        // one lookup per task along ledger_task_kind_unique (a join on the ids, so the plan never becomes a scan)
        const entries = rowsOf(
          await m.query(`SELECT l.id::text AS id FROM unnest($1::text[]) AS moved(id) JOIN ledger_entries l ON l.task_id = moved.id`, [ids]),
        );
        await moveLedgerEntries(
          m,
          entries.map((r) => r.id as string),
        );
      }
      return ids.length;
    });
  }

  /**
   * Moves up to `limit` ledger entries of no task (top-ups, adjustments) or of a closed credit lease, older than
   * `days` days, to `ledger_archive` (oldest first along `ledger_untasked_created_idx`); returns how many. The lease's
   * status is a per-row primary-key lookup (a scalar subquery): as EXISTS the planner hash-joined a sequential scan of
   * every credit lease ever granted (10,000 rows per batch on the 10 M-task volume database, and growing with them).
   */
  async archiveLedger(days: number, limit = RETENTION_BATCH): Promise<number> {
    return this.ds.transaction(async (m) => {
      const picked = rowsOf(
        await m.query(
          `SELECT l.id::text AS id FROM ledger_entries l
         WHERE (l.task_id IS NULL OR l.task_id LIKE 'lease\\_%') AND l.created_at < now() - ($1 || ' days')::interval
           AND (l.task_id IS NULL OR (SELECT c.status FROM credit_leases c WHERE c.id = l.task_id) = 'closed')
         ORDER BY l.created_at
         LIMIT $2
         FOR UPDATE OF l SKIP LOCKED`,
          [String(days), limit],
        ),
      );
      return moveLedgerEntries(
        m,
        picked.map((r) => r.id as string),
      );
    });
  }

  private async moveTasks(m: EntityManager, days: number, limit: number): Promise<string[]> {
    const rows = rowsOf(
      await m.query(
        `WITH picked AS MATERIALIZED (
         SELECT t.id FROM tasks t
         WHERE t.settled_at IS NOT NULL AND t.completed_at < now() - ($1 || ' days')::interval
           AND NOT EXISTS (SELECT 1 FROM avatar_assets a WHERE a.task_id = t.id)
         ORDER BY t.completed_at
         LIMIT $2
         FOR UPDATE OF t SKIP LOCKED
       ), moved AS (
         DELETE FROM tasks t WHERE t.id = ANY(ARRAY(SELECT id FROM picked)) RETURNING t.*
       ), kept AS (
         INSERT INTO tasks_archive (id, account_id, created_at, completed_at, task)
         SELECT id, account_id, created_at, completed_at, to_jsonb(moved) FROM moved
         ON CONFLICT (id) DO NOTHING
       )
       SELECT id FROM moved`,
        [String(days), limit],
      ),
    );
    return rows.map((r) => r.id as string);
  }

  /** Deletes up to `limit` webhook delivery records older than `days` days (oldest first, along `created_at`). */
  async pruneWebhookDeliveries(days: number, limit = RETENTION_BATCH): Promise<number> {
    // TypeORM answers a DELETE with [rows, count]: rowsOf takes the rows
    const rows = rowsOf(
      await this.ds.query(
        // a MATERIALIZED CTE, not `id IN (subquery LIMIT n)`: the planner may rescan such a subquery and delete more than n.
        // `= ANY(ARRAY(…))`, not a join on the CTE: the planner cannot estimate the CTE's rows and hash-joined it to a
        // sequential scan of the whole log (scripts/explain-volume.ts, 1 M deliveries); an array of ids is pkey lookups.
        `WITH picked AS MATERIALIZED (
         SELECT id FROM webhook_deliveries WHERE created_at < now() - ($1 || ' days')::interval
         ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED
       )
       DELETE FROM webhook_deliveries w WHERE w.id = ANY(ARRAY(SELECT id FROM picked))
       RETURNING w.id`,
        [String(days), limit],
      ),
    );
    return rows.length;
  }

  /**
   * One sweep's share: per table, `policy.parallel` drains at once, each running batches while they come back full,
   * until the time budget or RETENTION_MAX_BATCHES.
   */
  async sweep(
    policy: RetentionPolicy,
    batch = RETENTION_BATCH,
    budgetMs = RETENTION_SWEEP_BUDGET_MS,
  ): Promise<{ archivedTasks: number; archivedLedgerEntries: number; prunedDeliveries: number }> {
    const until = Date.now() + budgetMs;
    const drain = async (days: number, step: (d: number, n: number) => Promise<number>): Promise<number> => {
      let total = 0;
      for (let i = 0; days > 0 && i < RETENTION_MAX_BATCHES; i++) {
        const n = await step(days, batch);
        total += n;
        if (n < batch || Date.now() >= until) break;
      }
      return total;
    };
    const lanes = Math.max(1, Math.min(8, policy.parallel ?? 1));
    const drains = async (days: number, step: (d: number, n: number) => Promise<number>): Promise<number> =>
      (await Promise.all(Array.from({ length: lanes }, () => drain(days, step)))).reduce((a, b) => a + b, 0);
    const [archivedTasks, archivedLedgerEntries, prunedDeliveries] = await Promise.all([
      drains(policy.taskDays, (d, n) => this.archiveTasks(d, n)),
      drains(policy.ledgerDays, (d, n) => this.archiveLedger(d, n)),
      drains(policy.webhookDeliveryDays, (d, n) => this.pruneWebhookDeliveries(d, n)),
    ]);
    return { archivedTasks, archivedLedgerEntries, prunedDeliveries };
  }
}
