import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `tasks.settled_at`: set by settleTask in the transaction that writes the capture/release, so the settlement
 * sweeper reads only the unsettled tail (a small partial index) instead of every task ever settled.
 */
export class TaskSettledAt1763856000000 implements MigrationInterface {
  name = 'TaskSettledAt1763856000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks ADD COLUMN settled_at timestamptz NULL`);
    await q.query(`
      UPDATE tasks t SET settled_at = l.created_at
      FROM (SELECT task_id, min(created_at) AS created_at FROM ledger_entries
            WHERE kind IN ('capture','release') AND task_id IS NOT NULL GROUP BY task_id) l
      WHERE l.task_id = t.id`);
    await q.query(`
      CREATE INDEX tasks_unsettled_completed_idx ON tasks (completed_at)
      WHERE settled_at IS NULL AND status IN ('completed','failed')`);
    // Only findUnsettled used it; the partial index above replaces it.
    await q.query(`DROP INDEX IF EXISTS tasks_terminal_completed_idx`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS tasks_terminal_completed_idx ON tasks (completed_at) WHERE status IN ('completed','failed')`);
    await q.query(`DROP INDEX IF EXISTS tasks_unsettled_completed_idx`);
    await q.query(`ALTER TABLE tasks DROP COLUMN IF EXISTS settled_at`);
  }
}
