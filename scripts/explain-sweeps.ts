/**
 * Builds a database of EXPLAIN_TASKS tasks (default 1,000,000; generate_series, about a minute) shaped like a
 * long-running gateway — almost every task finished and settled, a small open backlog, a few unsettled — with two
 * ledger entries per finished task, and prints the plan of every periodic query: each sweep's page (the first page
 * and a page after a key in the middle of the range) and the billing money gauges. Each must be an index scan of a
 * bounded range, never a sequential scan of tasks or ledger_entries; the script exits 1 when one is.
 *   node --import tsx scripts/explain-sweeps.ts            (TEST_DATABASE_ADMIN_URL: the server; the db is dropped)
 * The SQL is the repositories' own: their `query` is recorded, then run under EXPLAIN (ANALYZE, BUFFERS).
 */
import { ChatCallRepository, CreditLeaseRepository, OpsStatsRepository, RetentionRepository, TaskRecoveryRepository, seedDemo } from '@gmg/db';
import { createTestDatabase } from '@gmg/testing';
import type { DataSource } from 'typeorm';

const N = Number(process.env.EXPLAIN_TASKS ?? 1_000_000);

interface Recorded {
  sql: string;
  params: unknown[];
}
/**
 * A data source that records each statement (a transaction's too) and answers no rows, except what `answer` gives
 * for a statement (the plans are taken afterwards).
 */
function recorder(answer: (sql: string) => unknown[] = () => []): { ds: DataSource; taken: Recorded[] } {
  const taken: Recorded[] = [];
  const query = async (sql: string, params: unknown[] = []): Promise<unknown[]> => {
    taken.push({ sql, params });
    return answer(sql);
  };
  const transaction = async <T>(run: (m: { query: typeof query }) => Promise<T>): Promise<T> => run({ query });
  return { taken, ds: { query, transaction } as unknown as DataSource };
}

async function main(): Promise<void> {
  const db = await createTestDatabase('gmg_explain');
  const q = (sql: string, p: unknown[] = []) => db.dataSource.query(sql, p) as Promise<Array<Record<string, unknown>>>;
  try {
    const { accountId } = await seedDemo(db.dataSource, {
      apiKey: 'sk-explain-0123456789abcdef',
      balanceMinor: 10n ** 15n,
      channelBaseUrl: 'http://127.0.0.1:1',
    });
    const [key] = await q(`SELECT id FROM api_keys WHERE account_id = $1`, [accountId]);
    const t0 = Date.now();
    // i % 1000: 0–4 open (0.5 %), 5 unsettled terminal (0.1 %), the rest finished and settled. Pools round-robin.
    await q(
      `
      INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, status, progress, request, price, price_snapshot,
                         created_at, completed_at, deadline_at, updated_at, settled_at)
      SELECT 'task_' || lpad(to_hex(i), 12, '0'), $1, $2, 'lumen-2-pro', 'lumen-2-pro',
             (ARRAY['image','video','artgen','avatar'])[1 + i % 4],
             CASE WHEN i % 1000 < 5 THEN 'processing' WHEN i % 7 = 0 THEN 'failed' ELSE 'completed' END,
             CASE WHEN i % 1000 < 5 THEN 50 ELSE 100 END,
             '{"prompt":"x"}'::jsonb, 1000, '{}'::jsonb,
             ts, CASE WHEN i % 1000 < 5 THEN NULL ELSE ts + interval '20 seconds' END,
             ts + interval '30 minutes', ts + interval '20 seconds',
             CASE WHEN i % 1000 < 6 THEN NULL ELSE ts + interval '21 seconds' END
      FROM generate_series(1, $3::int) i, LATERAL (SELECT now() - (($3::int - i) * interval '86 milliseconds') AS ts) t`,
      [accountId, key!.id, N],
    );
    await q(`
      INSERT INTO ledger_entries (account_id, task_id, kind, amount, created_at)
      SELECT account_id, id, k.kind, price, created_at FROM tasks,
             LATERAL (SELECT 'hold' AS kind UNION ALL SELECT CASE WHEN status = 'failed' THEN 'release' ELSE 'capture' END
                      WHERE settled_at IS NOT NULL) k`);
    // top-ups: the ledger's entries of no task (a few per account), spread over the same day
    await q(
      `INSERT INTO ledger_entries (account_id, kind, amount, created_at)
             SELECT $1, 'topup', 1000, now() - i * interval '15 minutes' FROM generate_series(1, 96) i`,
      [accountId],
    );
    await q('VACUUM ANALYZE tasks');
    await q('VACUUM ANALYZE ledger_entries');
    const [size] = await q(`SELECT (SELECT count(*) FROM tasks) AS tasks, (SELECT count(*) FROM ledger_entries) AS ledger`);
    console.log(`explain-sweeps: ${String(size!.tasks)} tasks, ${String(size!.ledger)} ledger entries built in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);

    const middle =
      'task_' +
      Math.floor(N / 2)
        .toString(16)
        .padStart(12, '0');
    // a task batch the archive moved: its ledger entries are looked up next, so that lookup's plan is shown too
    const movedBatch = Array.from({ length: 1000 }, (_, i) => ({ id: 'task_' + (Math.floor(N / 2) + i).toString(16).padStart(12, '0') }));
    const r = recorder((sql) => (/SELECT id FROM moved/.test(sql) ? movedBatch : []));
    const recovery = new TaskRecoveryRepository(r.ds);
    const queries: Array<[string, () => Promise<unknown>]> = [
      ['timeout sweep, first page (overdueIds)', () => recovery.overdueIds('image', 500)],
      ['timeout sweep, page after a middle key', () => recovery.overdueIds('image', 500, middle)],
      ['orphan sweep, first page (openIds)', () => recovery.openIds('image', 60_000, 500)],
      ['orphan sweep, page after a middle key', () => recovery.openIds('image', 60_000, 500, middle)],
      ['rebuild after a Redis loss (openIds, untouched 0)', () => recovery.openIds('video', 0, 500)],
      ['billing sweep, first page (unsettledIds)', () => recovery.unsettledIds(30_000, 500)],
      ['billing sweep, page after a middle key', () => recovery.unsettledIds(30_000, 500, middle)],
      ['chat sweep (findOverdue)', () => new ChatCallRepository(r.ds).findOverdue(200)],
      ['credit lease sweep (findExpired)', () => new CreditLeaseRepository(r.ds).findExpired(200)],
      ['money gauge: unsettled backlog', () => new OpsStatsRepository(r.ds).unsettled()],
      ['money gauge: ledger totals per kind', () => new OpsStatsRepository(r.ds).money().catch(() => undefined)],
      // EXPLAIN ANALYZE runs them: with the history one day deep, a 30-day retention moves nothing (the plan is the point)
      ['retention: archive a batch of ended tasks, then their ledger entries (archiveTasks)', () => new RetentionRepository(r.ds).archiveTasks(30)],
      ["retention: archive a batch of top-ups and closed leases' entries (archiveLedger)", () => new RetentionRepository(r.ds).archiveLedger(400)],
    ];
    let bad = 0;
    for (const [label, run] of queries) {
      r.taken.length = 0;
      await run();
      for (const { sql, params } of r.taken) {
        if (/FROM tasks WHERE settled_at IS NULL/.test(sql) && label.includes('ledger totals')) continue; // shown above
        const plan = (await q(`EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, SUMMARY ON) ${sql}`, params)).map((row) => String(row['QUERY PLAN']));
        const seq = plan.some((l) => /Seq Scan on (tasks|ledger_entries)\b/.test(l));
        if (seq) bad++;
        console.log(`--- ${label}${seq ? '   <-- SEQUENTIAL SCAN' : ''}\n${sql.replace(/\s+/g, ' ').trim()}\n${plan.map((l) => `  ${l}`).join('\n')}\n`);
      }
    }
    console.log(bad ? `explain-sweeps: ${bad} plan(s) scan a whole table` : 'explain-sweeps: every periodic query is an index scan of a bounded range');
    process.exitCode = bad ? 1 : 0;
  } finally {
    await db.drop();
  }
}

main().catch((e: unknown) => {
  console.error(`explain-sweeps: failed: ${e instanceof Error ? e.stack : String(e)}`);
  process.exit(1);
});
