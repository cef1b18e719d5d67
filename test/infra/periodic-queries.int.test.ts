import { createTestDatabase, seedVolume, type TestDatabase } from '@gmg/testing';
import { callerOf, consoleQueries, explainAll, judge, periodicQueries, scansOf } from '../../scripts/lib/periodic-queries';

/**
 * scripts/explain-volume.ts at a small size: the volume seed has the shape it promises, every periodic query runs
 * through its repository under EXPLAIN and leaves the database as it was, and the judge calls a sequential scan of
 * a large table or a run past its bound unbounded. (The full-size run, 10 M tasks, is docs/benchmarks.md's table.)
 */
describe('periodic queries at volume (small)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });
  const q = <T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]> => db.dataSource.query(sql, params);

  it('seeds the shape it promises: statuses, ages, pools, accounts skewed, ~2 ledger entries per task, balances that agree', async () => {
    const r = await seedVolume(db.dataSource, { tasks: 20_000, ledger: 42_000, accounts: 50, days: 60 });
    expect(r).toMatchObject({ tasks: 20_000, accounts: 50 });
    expect(r.ledger).toBeGreaterThanOrEqual(40_000);
    const [shape] = await q<Record<string, string>>(`
      SELECT count(*) FILTER (WHERE status IN ('pending','processing'))::text AS open,
             count(*) FILTER (WHERE settled_at IS NULL AND status IN ('completed','failed'))::text AS unsettled,
             count(*) FILTER (WHERE status = 'failed')::text AS failed,
             count(DISTINCT pool)::text AS pools,
             (extract(epoch FROM max(created_at) - min(created_at)) / 86400)::int::text AS days,
             count(*) FILTER (WHERE idempotency_key IS NOT NULL AND created_at < now() - interval '24 hours')::text AS keys_past_expiry,
             bool_and(id ~ '^task_[0-9a-z]{9}') AS ids_timed
      FROM tasks`);
    expect(shape).toMatchObject({ open: '100', unsettled: '20', pools: '5', days: '60', ids_timed: true });
    expect(Number(shape!.failed)).toBeGreaterThan(2000);
    expect(Number(shape!.keys_past_expiry)).toBeGreaterThan(0);
    // time-ordered ids: id order is creation order
    const [order] = await q<{ ok: boolean }>(
      `SELECT bool_and(prev IS NULL OR prev <= created_at) AS ok FROM (SELECT created_at, lag(created_at) OVER (ORDER BY id) AS prev FROM tasks) t`,
    );
    expect(order!.ok).toBe(true);
    // the hottest account holds far more than an even share
    const [hot] = await q<{ share: number }>(`SELECT (max(n)::float8 / sum(n)) AS share FROM (SELECT count(*) AS n FROM tasks GROUP BY account_id) c`);
    expect(hot!.share).toBeGreaterThan(3 / 50);
    // held = what the unsettled tasks and active leases hold; ledger_totals counted every entry
    const [money] = await q<{ held_ok: boolean; totals_ok: boolean }>(`
      SELECT (SELECT sum(held) FROM accounts) = (SELECT sum(price) FROM tasks WHERE settled_at IS NULL) + (SELECT COALESCE(sum(amount), 0) FROM credit_leases WHERE status = 'active') AS held_ok,
             (SELECT sum(entries) FROM ledger_totals) = (SELECT count(*) FROM ledger_entries) AS totals_ok`);
    expect(money).toEqual({ held_ok: true, totals_ok: true });
  });

  it('EXPLAINs every periodic query through its repository and changes nothing', async () => {
    const before = await q<{
      t: string;
    }>(`SELECT (SELECT count(*) FROM tasks WHERE status IN ('pending','processing')) || '/' || (SELECT count(*) FROM ledger_entries) || '/' ||
      (SELECT count(*) FROM tasks_archive) || '/' || (SELECT count(*) FROM credit_leases WHERE status = 'active') AS t`);
    const { results, backlog } = await explainAll(db.dataSource, periodicQueries());
    expect(backlog.open).toBe(100);
    expect(results.map((r) => r.label)).toEqual(periodicQueries().map((p) => p.label));
    for (const r of results) expect({ label: r.label, planned: r.statements > 0 }).toEqual({ label: r.label, planned: true });
    // the retention batch really moved rows inside its rolled-back transaction (the plan is of real work)
    const archive = results.find((r) => r.label.startsWith('retention: archive a batch of 1,000 ended tasks'))!;
    expect(archive.statements).toBeGreaterThanOrEqual(3);
    expect(archive.rowsTouched).toBeGreaterThanOrEqual(1000);
    const after = await q<{
      t: string;
    }>(`SELECT (SELECT count(*) FROM tasks WHERE status IN ('pending','processing')) || '/' || (SELECT count(*) FROM ledger_entries) || '/' ||
      (SELECT count(*) FROM tasks_archive) || '/' || (SELECT count(*) FROM credit_leases WHERE status = 'active') AS t`);
    expect(after).toEqual(before);
  });

  it('calls a Seq Scan of a large table, or a run past its bound, unbounded', () => {
    const seq = scansOf({
      'Node Type': 'Limit',
      Plans: [{ 'Node Type': 'Seq Scan', 'Relation Name': 'tasks', 'Actual Rows': 10, 'Rows Removed by Filter': 990, 'Actual Loops': 1 }],
    });
    expect(seq).toEqual([{ node: 'Seq Scan', relation: 'tasks', index: undefined, touched: 1000 }]);
    expect(judge(seq, 1000, 5000, { tasks: 10_000_000 })).toEqual(['Seq Scan on tasks (10,000,000 rows)']);
    expect(judge(seq, 1000, 5000, { tasks: 5000 })).toEqual([]); // a small table: a scan is the right plan
    const loops = scansOf({ 'Node Type': 'Index Scan', 'Relation Name': 'ledger_entries', 'Actual Rows': 2, 'Actual Loops': 3000 });
    expect(judge(loops, 6000, 5000, { ledger_entries: 20_000_000 })).toEqual(['6,000 rows touched > bound 5,000']);
  });

  it("finds each query's caller: a line of the named service file that calls the named method", () => {
    for (const p of [...periodicQueries(), ...consoleQueries()]) {
      expect({ file: p.file, method: p.method, found: !callerOf(p).endsWith(':0') }).toEqual({ file: p.file, method: p.method, found: true });
    }
  });

  it("EXPLAINs the console's lists through their repository, the unfiltered walk along tasks (created_at, id) and within the budget", async () => {
    const { results } = await explainAll(db.dataSource, consoleQueries());
    expect(results.map((r) => r.label)).toEqual(consoleQueries().map((c) => c.label));
    // planned through the repository; the bounds are proven at volume (docs/benchmarks.md): on 20,000 rows the planner
    // may rightly scan a busy account's tasks whole instead of walking its index
    for (const r of results) expect({ label: r.label, planned: r.statements > 0 }).toEqual({ label: r.label, planned: true });
    const walked = (label: string): Array<string | undefined> =>
      results
        .find((r) => r.label === label)!
        .scans.filter((s) => s.relation === 'tasks')
        .map((s) => s.index);
    expect(walked('console: all tasks, newest page')).toContain('tasks_created_id_idx');
    // the walk reads at most its budget whatever the filters: a rare combination reads the budget, no more
    const rare = results.find((r) => r.label.startsWith("console: one channel's failed video tasks"))!;
    expect(rare.scans.find((s) => s.relation === 'tasks')!.touched).toBeLessThanOrEqual(5000);
  });
});
