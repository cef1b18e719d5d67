import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexConcurrently, dropIndex } from './concurrent-index';

/**
 * The owed-webhooks sweep (WebhookRepository.owedIds) pages the window's callback tasks in (completed_at, id) order
 * along this index, partial on the tasks that carry a callback URL and are settled and terminal: a page reads from
 * where the last ended, so the rebuild after a Redis loss (a 24 h window) reads each callback task of the day once
 * instead of the whole day's terminal tasks per page (scripts/explain-volume.ts, issue 38). Its columns change only
 * with a terminal transition or a settlement, which already write the indexes (status and settled_at are in other
 * partial indexes' predicates), so a task's progress updates stay HOT. Built CONCURRENTLY: expand only.
 */
export class CallbackKeysetIndex1765700000000 implements MigrationInterface {
  name = 'CallbackKeysetIndex1765700000000';
  transaction = false as const;

  async up(q: QueryRunner): Promise<void> {
    await createIndexConcurrently(
      q,
      'tasks_callback_completed_idx',
      `ON tasks (completed_at, id) WHERE callback_url IS NOT NULL AND settled_at IS NOT NULL AND status IN ('completed','failed')`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await dropIndex(q, 'tasks_callback_completed_idx');
  }
}
