import type { DataSource } from 'typeorm';
import { rowsOf } from './sql';

/** Rows one retention statement moves or deletes (a short transaction; the sweep runs several per beat). */
export const RETENTION_BATCH = 1000;
/** Batches per table in one sweep (the sweep's beat, SWEEP_INTERVAL_MS, bounds the rate: 10,000 rows a beat). */
export const RETENTION_BATCHES_PER_SWEEP = 10;

export interface RetentionPolicy {
  /** Ended, settled tasks older than this many days go to `tasks_archive`; 0: kept forever. */
  taskDays: number;
  /** Webhook delivery records older than this many days are deleted; 0: kept forever. */
  webhookDeliveryDays: number;
}

/**
 * Tables that stay small (docs/operations.md, "Retention"). Each statement is one bounded batch, oldest first along
 * an index, and skips rows another transaction holds: safe to run from every billing replica at once (the sweep is
 * one BullMQ repeatable job, so in practice one runs at a time).
 * - tasks: settled (so ended: completed or failed), `completed_at` older than the retention → `tasks_archive` (the
 *   whole row as jsonb); a task an avatar asset names stays (its asset refers to it). Open or unsettled tasks never
 *   move. The ledger is never touched: money history stays whole in `ledger_entries`.
 * - webhook_deliveries: the delivery log older than its retention is deleted (a task that old sends no webhook).
 */
export class RetentionRepository {
  constructor(private readonly ds: Pick<DataSource, 'query'>) {}

  /** Moves up to `limit` ended, settled tasks whose `completed_at` is older than `days` days; returns how many. */
  async archiveTasks(days: number, limit = RETENTION_BATCH): Promise<number> {
    const rows: unknown[] = await this.ds.query(
      `WITH picked AS MATERIALIZED (
         SELECT t.id FROM tasks t
         WHERE t.settled_at IS NOT NULL AND t.completed_at < now() - ($1 || ' days')::interval
           AND NOT EXISTS (SELECT 1 FROM avatar_assets a WHERE a.task_id = t.id)
         ORDER BY t.completed_at
         LIMIT $2
         FOR UPDATE OF t SKIP LOCKED
       ), moved AS (
         DELETE FROM tasks t USING picked WHERE t.id = picked.id RETURNING t.*
       )
       INSERT INTO tasks_archive (id, account_id, created_at, completed_at, task)
       SELECT id, account_id, created_at, completed_at, to_jsonb(moved) FROM moved
       ON CONFLICT (id) DO NOTHING
       RETURNING id`,
      [String(days), limit],
    );
    return rows.length;
  }

  /** Deletes up to `limit` webhook delivery records older than `days` days (oldest first, along `created_at`). */
  async pruneWebhookDeliveries(days: number, limit = RETENTION_BATCH): Promise<number> {
    // TypeORM answers a DELETE with [rows, count]: rowsOf takes the rows
    const rows = rowsOf(await this.ds.query(
      // a MATERIALIZED CTE, not `id IN (subquery LIMIT n)`: the planner may rescan such a subquery and delete more than n
      `WITH picked AS MATERIALIZED (
         SELECT id FROM webhook_deliveries WHERE created_at < now() - ($1 || ' days')::interval
         ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED
       )
       DELETE FROM webhook_deliveries w USING picked WHERE w.id = picked.id
       RETURNING w.id`,
      [String(days), limit],
    ));
    return rows.length;
  }

  /** One sweep's share: up to RETENTION_BATCHES_PER_SWEEP batches per table, stopping at the first short batch. */
  async sweep(policy: RetentionPolicy, batch = RETENTION_BATCH): Promise<{ archivedTasks: number; prunedDeliveries: number }> {
    const drain = async (days: number, step: (d: number, n: number) => Promise<number>): Promise<number> => {
      let total = 0;
      for (let i = 0; days > 0 && i < RETENTION_BATCHES_PER_SWEEP; i++) {
        const n = await step(days, batch);
        total += n;
        if (n < batch) break;
      }
      return total;
    };
    return {
      archivedTasks: await drain(policy.taskDays, (d, n) => this.archiveTasks(d, n)),
      prunedDeliveries: await drain(policy.webhookDeliveryDays, (d, n) => this.pruneWebhookDeliveries(d, n)),
    };
  }
}
