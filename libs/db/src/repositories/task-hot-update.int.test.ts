import { createTestDatabase, testTask, type TestDatabase } from '@gmg/testing';
import { AccountRepository } from './account.repository';
import { ApiKeyRepository } from './api-key.repository';
import { CreditLeaseRepository } from './credit-lease.repository';
import { TaskRepository } from './task.repository';

/**
 * The steady writes of an open task — a progress step, the upstream's native view, a chat call's journal entry —
 * change no indexed column of `tasks`, so Postgres makes them heap-only (HOT): no entry in any of the table's
 * indexes (migration 1765500000000-tasks-hot-updates). Counted by Postgres itself (`pg_stat_user_tables`, this
 * backend's statistics flushed on request); an index that names `updated_at` (or progress, native, result) fails it.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

it('progress, native-view and journal updates of an open task are heap-only (HOT)', async () => {
  const accounts = new AccountRepository(db.dataSource);
  const account = await accounts.create({ name: 'hot' });
  await accounts.topup(account.id, 1_000_000n, {});
  const { key } = await new ApiKeyRepository(db.dataSource).create({ accountId: account.id, name: 'k', models: null });
  // the set-up above only inserts into tasks; every update below runs on one backend, each statement its own
  // transaction as in production, so the update counts compared are this backend's alone
  const qr = db.dataSource.createQueryRunner();
  await qr.connect();
  try {
    const one = { query: (sql: string, params?: unknown[]) => qr.query(sql, params) };
    const tasks = new TaskRepository(one);
    const task = await tasks.createWithHold(testTask({ accountId: account.id, apiKeyId: key.id }, 100n));
    // its first step moves it pending → processing: a status change, rightly not heap-only (status is indexed)
    expect(await tasks.updateProgress(task.id, 5)).not.toBeNull();
    const counted = async () => {
      await qr.query(`SELECT pg_stat_force_next_flush()`);
      const [row] = (await qr.query(`SELECT n_tup_upd::int AS updated, n_tup_hot_upd::int AS hot FROM pg_stat_user_tables WHERE relname = 'tasks'`)) as Array<{
        updated: number;
        hot: number;
      }>;
      return row!;
    };
    const before = await counted();
    expect(await tasks.updateProgress(task.id, 10)).not.toBeNull();
    expect(await tasks.updateProgress(task.id, 40)).not.toBeNull();
    expect(await tasks.updateNative(task.id, { status: 'IN_PROGRESS', progress: '40%' })).not.toBeNull();
    // (the journal writes chat calls only; this image task is not one: it changes nothing here)
    await new CreditLeaseRepository(one as never).journal([{ id: task.id, costSoFar: 5n }]);
    const after = await counted();
    expect({ updated: after.updated - before.updated, hot: after.hot - before.hot }).toEqual({ updated: 3, hot: 3 });
  } finally {
    await qr.release();
  }
});
