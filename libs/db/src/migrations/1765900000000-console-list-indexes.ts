import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexConcurrently, dropIndex } from './concurrent-index';

/**
 * The console's lists (issue 40; docs/management-api.md, "Console routes"): `GET /api/tasks` pages newest first over
 * every task, or over one key's, and `GET /api/accounts` over every account, each a keyset walk on
 * (created_at, id) that reads at most a page's scan budget of index entries (libs/db TaskListRepository). The other
 * filters (account: tasks_account_created_idx already; channel, model, status, pool, a name part) are checked on
 * the rows of that walk. All three columns are written once, at insert: a task's or an account's updates (progress,
 * balances) stay HOT. Built CONCURRENTLY: expand only.
 */
export class ConsoleListIndexes1765900000000 implements MigrationInterface {
  name = 'ConsoleListIndexes1765900000000';
  transaction = false as const;

  async up(q: QueryRunner): Promise<void> {
    await createIndexConcurrently(q, 'tasks_created_id_idx', 'ON tasks (created_at DESC, id DESC)');
    await createIndexConcurrently(q, 'tasks_key_created_idx', 'ON tasks (api_key_id, created_at DESC, id DESC)');
    await createIndexConcurrently(q, 'accounts_created_id_idx', 'ON accounts (created_at DESC, id DESC)');
  }

  async down(q: QueryRunner): Promise<void> {
    await dropIndex(q, 'accounts_created_id_idx');
    await dropIndex(q, 'tasks_key_created_idx');
    await dropIndex(q, 'tasks_created_id_idx');
  }
}
