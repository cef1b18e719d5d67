import { createTestDatabase, seedVolume, type TestDatabase } from '@gmg/testing';
import { LedgerTotals1765100100000 } from './migrations/1765100100000-ledger-totals';

/**
 * The ledger-totals migration on a ledger that already has entries (a deployment upgrading through it): the backfill
 * runs in keyset batches outside any lock, yet every entry is counted exactly once — those before the trigger by the
 * backfill, those after by the trigger — including on a re-run after an interruption.
 */
describe('ledger-totals migration: batched backfill', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    // 30,000 tasks: ~60,000 entries, more than one backfill batch (50,000 ids)
    await seedVolume(db.dataSource, { tasks: 30_000, ledger: 61_000, accounts: 20, days: 40 });
  });
  afterAll(async () => {
    await db?.drop();
  });

  const q = <T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]> => db.dataSource.query(sql, params);
  const totals = async (): Promise<Record<string, string>> =>
    Object.fromEntries(
      (
        await q<{ kind: string; t: string }>(`SELECT kind, sum(total)::text || '/' || sum(entries)::text AS t FROM ledger_totals GROUP BY kind ORDER BY kind`)
      ).map((r) => [r.kind, r.t]),
    );
  const truth = async (): Promise<Record<string, string>> =>
    Object.fromEntries(
      (
        await q<{ kind: string; t: string }>(`SELECT kind, sum(amount)::text || '/' || count(*)::text AS t FROM ledger_entries GROUP BY kind ORDER BY kind`)
      ).map((r) => [r.kind, r.t]),
    );
  /** The database as it was before the migration: no trigger, no totals. */
  const beforeMigration = async (): Promise<void> => {
    const runner = db.dataSource.createQueryRunner();
    try {
      await new LedgerTotals1765100100000().down(runner);
    } finally {
      await runner.release();
    }
  };
  const up = async (): Promise<void> => {
    const runner = db.dataSource.createQueryRunner();
    try {
      await new LedgerTotals1765100100000().up(runner);
    } finally {
      await runner.release();
    }
  };

  it('counts every existing entry once, in more than one batch, and leaves no progress row', async () => {
    await beforeMigration();
    const [{ n }] = await q<{ n: string }>(`SELECT max(id)::text AS n FROM ledger_entries`);
    expect(Number(n)).toBeGreaterThan(50_000);
    await up();
    expect(await totals()).toEqual(await truth());
    expect(await q(`SELECT 1 FROM pg_class WHERE relname = 'ledger_totals_backfill'`)).toHaveLength(0);
  });

  it('resumes an interrupted backfill without counting a batch twice, and the trigger counts what comes after', async () => {
    await beforeMigration();
    await up();
    // an interruption after the first batch: the progress row says 50,000 done, the totals hold exactly that batch
    await q(`TRUNCATE ledger_totals`);
    await q(`CREATE TABLE ledger_totals_backfill (hwm bigint NOT NULL, done bigint NOT NULL)`);
    await q(`INSERT INTO ledger_totals_backfill SELECT max(id), 50000 FROM ledger_entries`);
    await q(
      `INSERT INTO ledger_totals (kind, shard, total, entries) SELECT kind, 0, sum(amount), count(*) FROM ledger_entries WHERE id <= 50000 GROUP BY kind`,
    );
    await up(); // the re-run: the trigger exists, so no new mark; the batches resume at 50,000
    expect(await totals()).toEqual(await truth());
    const [acct] = await q<{ id: string }>(`SELECT id FROM accounts LIMIT 1`);
    await q(`INSERT INTO ledger_entries (account_id, kind, amount) VALUES ($1, 'topup', 777)`, [acct!.id]);
    expect(await totals()).toEqual(await truth());
  });
});
