import { createTestDatabase, type TestDatabase } from '@gmg/testing';

describe('migrations', () => {
  let db: TestDatabase;
  beforeAll(async () => { db = await createTestDatabase(); });
  afterAll(async () => { await db?.drop(); });

  it('create every table and refuse ledger updates', async () => {
    const rows: Array<{ table_name: string }> = await db.dataSource.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema='public' ORDER BY 1`,
    );
    expect(rows.map((r) => r.table_name)).toEqual(
      expect.arrayContaining(['accounts', 'api_keys', 'channels', 'groups', 'ledger_entries', 'prices', 'tasks']),
    );
    const [acc] = await db.dataSource.query(`INSERT INTO accounts (name) VALUES ('a') RETURNING id`);
    await db.dataSource.query(`INSERT INTO ledger_entries (account_id, kind, amount) VALUES ($1, 'topup', 5)`, [acc.id]);
    await expect(db.dataSource.query(`UPDATE ledger_entries SET amount = 6`)).rejects.toThrow(/append-only/);
    await expect(db.dataSource.query(`UPDATE accounts SET available = -1`)).rejects.toThrow(/check/i);
  });

  it('reverts cleanly', async () => {
    await db.dataSource.undoLastMigration();
    const rows: Array<{ n: string }> = await db.dataSource.query(
      `SELECT count(*) AS n FROM information_schema.tables WHERE table_schema='public' AND table_name='tasks'`,
    );
    expect(Number(rows[0].n)).toBe(0);
  });
});
