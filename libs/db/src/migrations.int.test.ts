import { createTestDatabase, type TestDatabase } from '@gmg/testing';
import { runMigrations } from './data-source';

describe('migrations', () => {
  let db: TestDatabase;
  beforeAll(async () => { db = await createTestDatabase(); });
  afterAll(async () => { await db?.drop(); });

  const q = <T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]> => db.dataSource.query(sql, params);
  const indexes = async (): Promise<string[]> =>
    (await q<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE tablename = 'tasks'`)).map((r) => r.indexname);
  const hasSettledAt = async (): Promise<boolean> =>
    (await q(`SELECT 1 FROM information_schema.columns WHERE table_name = 'tasks' AND column_name = 'settled_at'`)).length === 1;

  it('create every table and refuse ledger updates', async () => {
    const rows = await q<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema='public' ORDER BY 1`,
    );
    expect(rows.map((r) => r.table_name)).toEqual(
      expect.arrayContaining(['accounts', 'api_keys', 'channels', 'groups', 'ledger_entries', 'prices', 'tasks']),
    );
    const [acc] = await q<{ id: string }>(`INSERT INTO accounts (name) VALUES ('a') RETURNING id`);
    await q(`INSERT INTO ledger_entries (account_id, kind, amount) VALUES ($1, 'topup', 5)`, [acc.id]);
    await expect(q(`UPDATE ledger_entries SET amount = 6`)).rejects.toThrow(/append-only/);
    await expect(q(`UPDATE accounts SET available = -1`)).rejects.toThrow(/check/i);
  });

  it('task-settled-at adds settled_at and the unsettled partial index, replacing the terminal index', async () => {
    expect(await hasSettledAt()).toBe(true);
    const [def] = await q<{ indexdef: string }>(`SELECT indexdef FROM pg_indexes WHERE indexname = 'tasks_unsettled_completed_idx'`);
    expect(def.indexdef).toMatch(/\(completed_at\) WHERE \(\(settled_at IS NULL\) AND \(status = ANY/);
    expect(await indexes()).not.toContain('tasks_terminal_completed_idx');
  });

  it('artgen adds the nullable native column (the upstream\'s own task view), and reverts', async () => {
    const native = () => q<{ is_nullable: string; data_type: string }>(
      `SELECT is_nullable, data_type FROM information_schema.columns WHERE table_name = 'tasks' AND column_name = 'native'`,
    );
    expect(await native()).toEqual([{ is_nullable: 'YES', data_type: 'jsonb' }]);
    await db.dataSource.undoLastMigration();
    expect(await native()).toEqual([]);
  });

  it('task-idempotency-key binds a key once per API key, and reverts', async () => {
    const [def] = await q<{ indexdef: string }>(`SELECT indexdef FROM pg_indexes WHERE indexname = 'tasks_idempotency_uidx'`);
    expect(def.indexdef).toMatch(/UNIQUE INDEX .* \(api_key_id, idempotency_key\) WHERE \(idempotency_key IS NOT NULL\)/);
    await db.dataSource.undoLastMigration();
    const cols = await q(`SELECT 1 FROM information_schema.columns WHERE table_name = 'tasks' AND column_name = 'idempotency_key'`);
    expect(cols).toHaveLength(0);
    expect(await indexes()).not.toContain('tasks_idempotency_uidx');
  });

  it('task-settled-at backfills settled_at for tasks with a capture or release, and only those, after re-applying', async () => {
    await db.dataSource.undoLastMigration();
    expect(await hasSettledAt()).toBe(false);
    expect(await indexes()).toContain('tasks_terminal_completed_idx');

    const [acc] = await q<{ id: string }>(`INSERT INTO accounts (name) VALUES ('b') RETURNING id`);
    const [key] = await q<{ id: string }>(
      `INSERT INTO api_keys (account_id, key_hash, prefix) VALUES ($1, 'h-backfill', 'p') RETURNING id`, [acc.id],
    );
    const task = (id: string, status: string) => q(
      `INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, status, request, price, price_snapshot,
                          completed_at, deadline_at)
       VALUES ($1, $2, $3, 'm', 'm', 'image', $4, '{}', 10, '{}', now(), now())`, [id, acc.id, key.id, status],
    );
    const entry = (taskId: string, kind: string) =>
      q(`INSERT INTO ledger_entries (account_id, task_id, kind, amount) VALUES ($1, $2, $3, 10)`, [acc.id, taskId, kind]);
    await task('task_captured', 'completed');
    await entry('task_captured', 'hold');
    await entry('task_captured', 'capture');
    await task('task_released', 'failed');
    await entry('task_released', 'hold');
    await entry('task_released', 'release');
    await task('task_unsettled', 'completed');
    await entry('task_unsettled', 'hold');

    expect(await runMigrations(db.dataSource)).toEqual(['TaskSettledAt1763856000000', 'TaskIdempotencyKey1763942400000', 'Artgen1764028800000']);
    const rows = await q<{ id: string; settled: boolean }>(`SELECT id, settled_at IS NOT NULL AS settled FROM tasks ORDER BY id`);
    expect(rows).toEqual([
      { id: 'task_captured', settled: true },
      { id: 'task_released', settled: true },
      { id: 'task_unsettled', settled: false },
    ]);
  });

  it('reverts cleanly: artgen, task-idempotency-key, task-settled-at, then the initial schema', async () => {
    await db.dataSource.undoLastMigration();
    await db.dataSource.undoLastMigration();
    await db.dataSource.undoLastMigration();
    expect(await hasSettledAt()).toBe(false);
    expect(await indexes()).toEqual(expect.arrayContaining(['tasks_terminal_completed_idx']));
    expect(await indexes()).not.toContain('tasks_unsettled_completed_idx');

    await db.dataSource.undoLastMigration();
    const rows = await q<{ n: string }>(
      `SELECT count(*) AS n FROM information_schema.tables WHERE table_schema='public' AND table_name='tasks'`,
    );
    expect(Number(rows[0].n)).toBe(0);
  });
});
