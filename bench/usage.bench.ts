/**
 * `npm run bench -- usage`: GET /api/usage on a database of 1 million tasks (issue 37 item 6: within 200 ms, bounded
 * index scans).
 *
 * A fresh database is seeded with SQL generate_series (libs/testing seedVolume, the one volume seeder: 1,000,000
 * settled tasks over 30 days — 20 accounts of 2 keys, 4 channels, five models, 15 % chat calls, 15 % failed — with
 * their hold and capture or release in ledger_entries, and a few top-ups and credit leases), then rolled up by UsageRepository.rollup exactly
 * as the billing sweep does it, batch after batch (its rate is printed: the rollup must outrun the fleet's
 * settlements). The management router then serves real HTTP on 127.0.0.1 (port 0) and each query below is sent
 * BENCH_USAGE_RUNS times (default 30, one at a time, after 3 unmeasured ones); the client's latency p50/p99 is
 * printed with the EXPLAIN (ANALYZE, BUFFERS) of the query it ran. The bench fails when a p99 is over 200 ms or a
 * plan scans `tasks`, `ledger_entries` or `usage_hourly` sequentially; the rollup batch's plan must use the keyset
 * index on `tasks` and the ledger's (task_id, kind) index.
 *
 *   npm run bench -- usage
 *   BENCH_USAGE_TASKS=200000 BENCH_USAGE_RUNS=10 npm run bench -- usage
 *   BENCH_NOTE='…' labels the row in docs/benchmarks.md.
 */
import { managementApp } from '../services/api-edge/src/management/management.test-kit';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { ApiKeyRepository, UsageRepository, type UsageDimension } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createTestDatabase, seedVolume } from '@gmg/testing';
import { insertRow } from './doc-table';

const TASKS = Math.max(1000, Math.min(Number(process.env.BENCH_USAGE_TASKS ?? 1_000_000), 5_000_000));
const RUNS = Math.max(1, Math.min(Number(process.env.BENCH_USAGE_RUNS ?? 30), 1000));
const BUDGET_MS = 200;
const ADMIN = 'bench-usage-admin-token';
const DAY_S = 86_400;

const pct = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];

async function main(): Promise<void> {
  const db = await createTestDatabase('gmg_bench_usage');
  const server = { close: (): Promise<void> => Promise.resolve() };
  try {
    const t0 = Date.now();
    const volume = { tasks: TASKS, ledger: 2 * TASKS, accounts: 20, keysPerAccount: 2, channels: 4, days: 30, openPerMille: 0, unsettledPerMille: 0 };
    await seedVolume(db.dataSource, volume);
    const seedS = (Date.now() - t0) / 1000;
    // the /self query's caller and the one-account query's account: a key of the busiest account
    const [seeded] = (await db.dataSource.query(
      `SELECT k.id AS key, k.account_id AS account FROM api_keys k JOIN tasks t ON t.api_key_id = k.id GROUP BY k.id ORDER BY count(*) DESC LIMIT 1`,
    )) as Array<{ key: string; account: string }>;
    const usage = new UsageRepository(db.dataSource);
    // the newest tasks settle a little after the seeder ends: the rollup must take every one settled before it starts
    const [{ at: rollupFrom }] = (await db.dataSource.query(`SELECT now() AS at`)) as Array<{ at: Date }>;
    const t1 = Date.now();
    let rolled = 0;
    let rollupPlan = '';
    let explainMs = 0;
    for (let i = 0; i < 10_000; i++) {
      const n = await usage.rollup({ limit: 5000, lagMs: 0 });
      rolled += n;
      if (n === 0) break;
      // half way: a batch deep in the history must start where the watermark is, not scan what came before it
      if (!rollupPlan && rolled >= TASKS / 2) {
        const e0 = Date.now();
        rollupPlan = await usage.explainRollup();
        explainMs = Date.now() - e0;
      }
    }
    const rollS = (Date.now() - t1 - explainMs) / 1000;
    const [sizes] = (await db.dataSource.query(
      `SELECT (SELECT count(*) FROM tasks)::int AS tasks, (SELECT count(*) FROM ledger_entries)::int AS ledger,
              (SELECT count(*) FROM usage_hourly)::int AS hourly, (SELECT count(*) FROM usage_daily)::int AS daily`,
    )) as Array<Record<string, number>>;
    await db.dataSource.query(`VACUUM ANALYZE usage_hourly`);
    await db.dataSource.query(`VACUUM ANALYZE usage_daily`);
    console.log(
      `seeded ${sizes.tasks} tasks and ${sizes.ledger} ledger rows in ${seedS.toFixed(0)} s; rolled up ${rolled} tasks in ${rollS.toFixed(1)} s ` +
        `(${Math.round(rolled / rollS)} tasks/s, batches of 5000) into ${sizes.hourly} hourly and ${sizes.daily} daily rows`,
    );
    const [w] = (await db.dataSource.query(
      `SELECT count(*) FILTER (WHERE t.settled_at <= $1)::int AS due, count(*) FILTER (WHERE (t.settled_at, t.id) <= (s.settled_at, s.task_id))::int AS upto
       FROM tasks t, usage_rollup_state s`,
      [rollupFrom],
    )) as Array<{ due: number; upto: number }>;
    if (rolled !== w!.upto || w!.upto < w!.due)
      throw new Error(`rolled up ${rolled} tasks: ${w!.upto} up to the watermark, ${w!.due} settled before the rollup`);

    const keys = new ApiKeyRepository(db.dataSource);
    // the /self query's caller, given a secret of its own by a rotation
    const own = await keys.rotate(seeded!.key, 0);
    if (!own) throw new Error('the seeded key could not be rotated');
    const app = managementApp(db.dataSource, ADMIN, { logger: createLogger({ service: 'bench', level: 'warn' }) });
    const http = await new Promise<import('node:http').Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    server.close = () => new Promise((resolve) => http.close(() => resolve()));
    const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}/api`;

    const now = Math.floor(Date.now() / 1000);
    interface Case {
      name: string;
      path: string;
      auth: string;
      q: { from: number; to: number; groupBy: UsageDimension[]; accountId?: string; apiKeyId?: string; model?: string };
    }
    const qs = (c: Case['q'], extra = '') => `from=${c.from}&to=${c.to}&group_by=${c.groupBy.join(',')}${extra}`;
    const month = { from: now - 30 * DAY_S, to: now };
    const cases: Case[] = [
      { name: 'all accounts, 30 days, by day', path: '/usage', auth: ADMIN, q: { ...month, groupBy: ['day'] } },
      { name: 'all accounts, 30 days, by account and model', path: '/usage', auth: ADMIN, q: { ...month, groupBy: ['account', 'model'] } },
      {
        name: 'all accounts, 93 days, by model and channel',
        path: '/usage',
        auth: ADMIN,
        q: { from: now - 93 * DAY_S, to: now, groupBy: ['model', 'channel'] },
      },
      {
        name: 'one account, 30 days, by day and key',
        path: '/usage',
        auth: ADMIN,
        q: { ...month, groupBy: ['day', 'key'], accountId: seeded!.account },
      },
      { name: 'all accounts, 24 hours, by hour and model', path: '/usage', auth: ADMIN, q: { from: now - DAY_S, to: now, groupBy: ['hour', 'model'] } },
      { name: 'all accounts, 2 days, by hour and model (CSV)', path: '/usage', auth: ADMIN, q: { from: now - 2 * DAY_S, to: now, groupBy: ['hour', 'model'] } },
      {
        name: 'a key its own, 30 days, by day and model (/self)',
        path: '/usage/self',
        auth: own.secret,
        q: { ...month, groupBy: ['day', 'model'], accountId: seeded!.account, apiKeyId: own.key.id },
      },
    ];
    const problems: string[] = [];
    const results: string[] = [];
    for (const c of cases) {
      const csv = c.name.includes('CSV');
      const url = `${base}${c.path}?${qs(c.q, c.path === '/usage' && c.q.accountId ? `&account_id=${c.q.accountId}` : '')}`;
      const get = async (): Promise<number> => {
        const s = performance.now();
        const r = await fetch(url, { headers: { Authorization: `Bearer ${c.auth}`, ...(csv ? { Accept: 'text/csv' } : {}) } });
        const text = await r.text();
        if (r.status !== 200) throw new Error(`${c.name}: HTTP ${r.status} ${text.slice(0, 300)}`);
        return performance.now() - s;
      };
      for (let i = 0; i < 3; i++) await get();
      const times: number[] = [];
      for (let i = 0; i < RUNS; i++) times.push(await get());
      times.sort((a, b) => a - b);
      const [p50, p99] = [pct(times, 0.5), pct(times, 0.99)];
      // the same range the route reads (explain rounds it as report does: usageRange)
      const plan = await usage.explain({
        from: new Date(c.q.from * 1000),
        to: new Date(c.q.to * 1000),
        groupBy: c.q.groupBy,
        accountId: c.q.accountId,
        apiKeyId: c.q.apiKeyId,
      });
      console.log(`\n=== ${c.name}: GET /api${c.path}?${qs(c.q)} — p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms over ${RUNS} requests\n${plan}`);
      results.push(`${c.name}: p50 ${p50.toFixed(0)} / p99 ${p99.toFixed(0)} ms`);
      if (p99 > BUDGET_MS) problems.push(`${c.name}: p99 ${p99.toFixed(1)} ms > ${BUDGET_MS} ms`);
      const seq = /Seq Scan on (tasks|ledger_entries|usage_hourly)\b/.exec(plan);
      if (seq) problems.push(`${c.name}: ${seq[0]}`);
    }
    console.log(`\n=== one rollup batch (5000 tasks, half way through), executed and rolled back\n${rollupPlan}`);
    if (/Seq Scan on (tasks|ledger_entries)\b/.test(rollupPlan)) problems.push('rollup batch: a Seq Scan on tasks or ledger_entries');
    if (!/Index Scan using tasks_settled_keyset_idx/.test(rollupPlan) || !/Index Cond: .*ROW\(settled_at, id\) > ROW\(/.test(rollupPlan)) {
      problems.push('rollup batch: does not start at the watermark along tasks_settled_keyset_idx');
    }

    const date = new Date().toISOString().slice(0, 16).replace('T', ' ');
    const machine = `${os.cpus().length}× ${os.cpus()[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
    const load = os.loadavg()[0].toFixed(1);
    console.log(`\n${date} · ${machine} · load ${load}${process.env.BENCH_NOTE ? ` · ${process.env.BENCH_NOTE}` : ''}`);
    for (const r of results) console.log(`  ${r}`);
    console.log(`bounded plans and ≤ ${BUDGET_MS} ms p99: ${problems.length ? `FAILED\n  ${problems.join('\n  ')}` : 'ok'}`);
    insertRow(
      '| date (UTC) | change | machine | data |',
      `| ${date} | ${process.env.BENCH_NOTE ?? '—'} | ${machine}, load ${load} | ${sizes.tasks} tasks, ${sizes.ledger} ledger rows → ${sizes.hourly} hourly + ${sizes.daily} daily rows; rollup ${Math.round(rolled / rollS)} tasks/s | ${results.join('; ')} | ${problems.length ? 'FAILED' : 'ok'} |`,
    );
    if (problems.length) process.exitCode = 1;
  } finally {
    await server.close();
    await db.drop();
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
