import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexConcurrently, dropIndex } from './concurrent-index';

/**
 * HOT updates on `tasks` (issue 38 item 5; review scale-2026-11-27 §3.2): an UPDATE can be heap-only (no new entry in
 * any of the table's 14 indexes) only when it changes no indexed column and its page has room. `updated_at` was
 * carried by `tasks_open_pool_id_idx` (INCLUDE), so every progress step, native-view write and chat journal entry
 * — each sets `updated_at` — wrote to every index. Now:
 * - the open-task keyset index carries `deadline_at` only; the orphan sweep's "untouched for" filter reads
 *   `updated_at` from the heap for the rows of its page (bounded by the page; on a table this busy the visibility
 *   map rarely lets that scan skip the heap anyway);
 * - `fillfactor` 90 leaves room on each new page for the updates of its rows (only pages written from now on;
 *   a storage parameter, no rewrite; SHARE UPDATE EXCLUSIVE: reads and writes go on).
 * Expand then contract in one migration is safe here: the old index is only an access path, no release reads it by
 * name, and the new one is valid before the old one goes.
 */
export class TasksHotUpdates1765500000000 implements MigrationInterface {
  name = 'TasksHotUpdates1765500000000';
  transaction = false as const;

  async up(q: QueryRunner): Promise<void> {
    await createIndexConcurrently(q, 'tasks_open_pool_id_deadline_idx', `ON tasks (pool, id) INCLUDE (deadline_at) WHERE status IN ('pending','processing')`);
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS tasks_open_pool_id_idx`);
    await q.query(`ALTER TABLE tasks SET (fillfactor = 90)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks RESET (fillfactor)`);
    await q.query(
      `CREATE INDEX IF NOT EXISTS tasks_open_pool_id_idx ON tasks (pool, id) INCLUDE (deadline_at, updated_at) WHERE status IN ('pending','processing')`,
    );
    await dropIndex(q, 'tasks_open_pool_id_deadline_idx');
  }
}
