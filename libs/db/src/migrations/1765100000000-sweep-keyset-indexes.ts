import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexConcurrently, dropIndex } from './concurrent-index';

/**
 * An index in each sweep's page order (TaskRecoveryRepository: `… AND id > $after ORDER BY id LIMIT n`), partial on
 * the rows the sweep can want, so a page is a range scan of the backlog however long the history:
 * - open tasks of a pool, by id, carrying deadline_at and updated_at (the timeout sweep and the orphan sweep filter
 *   on them inside the index);
 * - unsettled terminal tasks, by id, carrying completed_at (the billing sweep).
 * Built CONCURRENTLY, outside a transaction: the fleet keeps writing tasks while they build.
 */
export class SweepKeysetIndexes1765100000000 implements MigrationInterface {
  name = 'SweepKeysetIndexes1765100000000';
  transaction = false as const;

  async up(q: QueryRunner): Promise<void> {
    await createIndexConcurrently(
      q,
      'tasks_open_pool_id_idx',
      `ON tasks (pool, id) INCLUDE (deadline_at, updated_at) WHERE status IN ('pending','processing')`,
    );
    await createIndexConcurrently(
      q,
      'tasks_unsettled_id_idx',
      `ON tasks (id) INCLUDE (completed_at) WHERE settled_at IS NULL AND status IN ('completed','failed')`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await dropIndex(q, 'tasks_unsettled_id_idx');
    await dropIndex(q, 'tasks_open_pool_id_idx');
  }
}
