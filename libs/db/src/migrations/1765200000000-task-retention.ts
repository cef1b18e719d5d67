import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexConcurrently, dropIndex } from './concurrent-index';

/**
 * Retention (docs/operations.md, "Retention"): ended, settled tasks older than TASK_RETENTION_DAYS leave `tasks` for
 * `tasks_archive`, one row each with the whole task as `jsonb` (so a later column of `tasks` needs no change here;
 * the gateway never reads the archive: it is the operator's to export and truncate). The billing sweep moves them
 * in bounded batches, oldest first, along a new index on `completed_at` partial on settled tasks (without it the
 * batch was a sequential scan of `tasks`: scripts/explain-volume.ts); the webhook delivery log is pruned along a new
 * index on its `created_at`. Both built CONCURRENTLY. Expand only: a new table and two indexes, no lock on `tasks`,
 * and the previous release never reads them.
 */
export class TaskRetention1765200000000 implements MigrationInterface {
  name = 'TaskRetention1765200000000';
  transaction = false as const;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS tasks_archive (
      id text PRIMARY KEY,
      account_id uuid NOT NULL,
      created_at timestamptz NOT NULL,
      completed_at timestamptz,
      archived_at timestamptz NOT NULL DEFAULT now(),
      task jsonb NOT NULL
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS tasks_archive_archived_at_idx ON tasks_archive (archived_at)`);
    await createIndexConcurrently(q, 'tasks_settled_completed_idx', `ON tasks (completed_at) WHERE settled_at IS NOT NULL`);
    await createIndexConcurrently(q, 'webhook_deliveries_created_at_idx', `ON webhook_deliveries (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await dropIndex(q, 'webhook_deliveries_created_at_idx');
    await dropIndex(q, 'tasks_settled_completed_idx');
    await q.query(`DROP TABLE IF EXISTS tasks_archive`);
  }
}
