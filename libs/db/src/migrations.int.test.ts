import { createTestDatabase, type TestDatabase } from '@gmg/testing';
import { MIGRATIONS, runMigrations } from './data-source';

describe('migrations', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  const q = <T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]> => db.dataSource.query(sql, params);
  const indexes = async (): Promise<string[]> =>
    (await q<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE tablename = 'tasks'`)).map((r) => r.indexname);
  const lastApplied = async (): Promise<string | undefined> => (await q<{ name: string }>(`SELECT name FROM migrations ORDER BY id DESC LIMIT 1`))[0]?.name;
  /** Reverts the newest migrations down to and including `name` (later migrations are added over time). */
  const revertThrough = async (name: string): Promise<void> => {
    for (let i = 0; i < MIGRATIONS.length; i++) {
      const last = await lastApplied();
      if (last === undefined) throw new Error(`${name} is not applied`);
      await db.dataSource.undoLastMigration();
      if (last === name) return;
    }
    throw new Error(`could not revert through ${name}`);
  };
  const namesAfter = (name: string): string[] => {
    const names = MIGRATIONS.map((m) => new m().name);
    return names.slice(names.indexOf(name));
  };
  const hasSettledAt = async (): Promise<boolean> =>
    (await q(`SELECT 1 FROM information_schema.columns WHERE table_name = 'tasks' AND column_name = 'settled_at'`)).length === 1;

  it('create every table and refuse ledger updates', async () => {
    const rows = await q<{ table_name: string }>(`SELECT table_name FROM information_schema.tables WHERE table_schema='public' ORDER BY 1`);
    expect(rows.map((r) => r.table_name)).toEqual(expect.arrayContaining(['accounts', 'api_keys', 'channels', 'groups', 'ledger_entries', 'prices', 'tasks']));
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

  it('messages-lease adds credit_leases, channels.version_header and the chat index, and reverts', async () => {
    const [lease] = await q<{ n: number }>(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name = 'credit_leases'`);
    expect(lease.n).toBe(1);
    const [col] = await q<{ column_default: string }>(
      `SELECT column_default FROM information_schema.columns WHERE table_name = 'channels' AND column_name = 'version_header'`,
    );
    expect(col.column_default).toContain('anthropic-version');
    expect(await indexes()).toContain('tasks_chat_open_deadline_idx');
    await revertThrough('MessagesLease1764201600000');
    expect(await q(`SELECT 1 FROM information_schema.tables WHERE table_name = 'credit_leases'`)).toHaveLength(0);
    expect(await q(`SELECT 1 FROM information_schema.columns WHERE table_name = 'channels' AND column_name = 'version_header'`)).toHaveLength(0);
    expect(await indexes()).not.toContain('tasks_chat_open_deadline_idx');
  });

  it('avatar-assets adds asset groups, assets and capture_amount (never above the price), and reverts', async () => {
    const [acc] = await q<{ id: string }>(`INSERT INTO accounts (name) VALUES ('cap') RETURNING id`);
    const [key] = await q<{ id: string }>(`INSERT INTO api_keys (account_id, key_hash, prefix) VALUES ($1, 'h-cap', 'p') RETURNING id`, [acc.id]);
    await q(
      `INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, request, price, price_snapshot, deadline_at)
       VALUES ('task_cap', $1, $2, 'm', 'm', 'avatar', '{}', 10, '{}', now())`,
      [acc.id, key.id],
    );
    await expect(q(`UPDATE tasks SET capture_amount = 11 WHERE id = 'task_cap'`)).rejects.toThrow(/tasks_capture_amount_check/);
    await q(`UPDATE tasks SET capture_amount = 4 WHERE id = 'task_cap'`);
    await q(`INSERT INTO asset_groups (id, account_id, name) VALUES ('group_a', $1, 'g')`, [acc.id]);
    await expect(
      q(
        `INSERT INTO avatar_assets (id, account_id, group_id, task_id, position, asset_type, name, url, project_name, status)
       VALUES ('asset_a', $1, 'group_a', 'task_cap', 0, 'Image', 'n', 'https://x', 'default', 'Approved')`,
        [acc.id],
      ),
    ).rejects.toThrow(/check/i);
    await revertThrough('AvatarAssets1764115200000');
    const tables = await q(`SELECT 1 FROM information_schema.tables WHERE table_name IN ('asset_groups','avatar_assets')`);
    expect(tables).toHaveLength(0);
    await q(`DELETE FROM tasks WHERE id = 'task_cap'`);
  });

  it("artgen adds the nullable native column (the upstream's own task view), and reverts", async () => {
    const native = () =>
      q<{ is_nullable: string; data_type: string }>(
        `SELECT is_nullable, data_type FROM information_schema.columns WHERE table_name = 'tasks' AND column_name = 'native'`,
      );
    expect(await native()).toEqual([{ is_nullable: 'YES', data_type: 'jsonb' }]);
    await revertThrough('Artgen1764028800000');
    expect(await native()).toEqual([]);
  });

  it('task-idempotency-key binds a key once per API key, and reverts', async () => {
    const [def] = await q<{ indexdef: string }>(`SELECT indexdef FROM pg_indexes WHERE indexname = 'tasks_idempotency_uidx'`);
    expect(def.indexdef).toMatch(/UNIQUE INDEX .* \(api_key_id, idempotency_key\) WHERE \(idempotency_key IS NOT NULL\)/);
    await revertThrough('TaskIdempotencyKey1763942400000');
    const cols = await q(`SELECT 1 FROM information_schema.columns WHERE table_name = 'tasks' AND column_name = 'idempotency_key'`);
    expect(cols).toHaveLength(0);
    expect(await indexes()).not.toContain('tasks_idempotency_uidx');
  });

  it('task-settled-at backfills settled_at for tasks with a capture or release, and only those, after re-applying', async () => {
    await revertThrough('TaskSettledAt1763856000000');
    expect(await hasSettledAt()).toBe(false);
    expect(await indexes()).toContain('tasks_terminal_completed_idx');

    const [acc] = await q<{ id: string }>(`INSERT INTO accounts (name) VALUES ('b') RETURNING id`);
    const [key] = await q<{ id: string }>(`INSERT INTO api_keys (account_id, key_hash, prefix) VALUES ($1, 'h-backfill', 'p') RETURNING id`, [acc.id]);
    const task = (id: string, status: string) =>
      q(
        `INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, status, request, price, price_snapshot,
                          completed_at, deadline_at)
       VALUES ($1, $2, $3, 'm', 'm', 'image', $4, '{}', 10, '{}', now(), now())`,
        [id, acc.id, key.id, status],
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

    expect(await runMigrations(db.dataSource)).toEqual(namesAfter('TaskSettledAt1763856000000'));
    const rows = await q<{ id: string; settled: boolean }>(`SELECT id, settled_at IS NOT NULL AS settled FROM tasks ORDER BY id`);
    expect(rows).toEqual([
      { id: 'task_captured', settled: true },
      { id: 'task_released', settled: true },
      { id: 'task_unsettled', settled: false },
    ]);
  });

  it('reverts cleanly: every later migration, then the initial schema', async () => {
    await revertThrough('TaskSettledAt1763856000000');
    expect(await lastApplied()).toBe('InitialSchema1763769600000');
    expect(await hasSettledAt()).toBe(false);
    expect(await indexes()).toEqual(expect.arrayContaining(['tasks_terminal_completed_idx']));
    expect(await indexes()).not.toContain('tasks_unsettled_completed_idx');

    await db.dataSource.undoLastMigration();
    const rows = await q<{ n: string }>(`SELECT count(*) AS n FROM information_schema.tables WHERE table_schema='public' AND table_name='tasks'`);
    expect(Number(rows[0].n)).toBe(0);
  });
});
