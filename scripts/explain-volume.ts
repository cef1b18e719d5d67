/**
 * EXPLAIN (ANALYZE, BUFFERS) of every periodic query the services run, and of the console's lists (issue 40), on a
 * database of production size (docs/benchmarks.md, "Periodic queries at volume"; issue 38).
 *   node --import tsx scripts/explain-volume.ts                      10 M tasks, 20 M ledger entries (≈ 40 min to seed)
 *   VOLUME_TASKS=1000000 VOLUME_LEDGER=2000000 node --import tsx scripts/explain-volume.ts
 * The database (VOLUME_DB, default gmg_volume_<tasks>) is created, migrated and seeded by seedVolume
 * (libs/testing/src/volume-seed.ts) on the server of TEST_DATABASE_ADMIN_URL, and KEPT: a second run reuses it
 * (VOLUME_DROP=1 drops it at the end). Each query is the repositories' own SQL (recorded from the repository call,
 * then run under EXPLAIN ANALYZE in a transaction that is rolled back, so a run changes nothing), reported with its
 * rows touched (rows out of every scan node, and buffers) and time. A plan fails when it is unbounded: a Seq Scan on
 * a table of more than 100,000 rows, or more rows touched than the query's own bound allows (its LIMIT or page
 * size, or the size of the small tables it reads). Exit 1 when one fails.
 */
import { Client } from 'pg';
import { createDataSource, runMigrations } from '@gmg/db';
import { seedVolume, TEST_PG_ADMIN_URL, volumeSeeded } from '@gmg/testing';
import { consoleQueries, explainAll, formatTable, periodicQueries } from './lib/periodic-queries';

const TASKS = Number(process.env.VOLUME_TASKS ?? 10_000_000);
const LEDGER = Number(process.env.VOLUME_LEDGER ?? TASKS * 2);
const DB = process.env.VOLUME_DB ?? `gmg_volume_${TASKS}`;

async function ensureDatabase(): Promise<string> {
  const admin = new Client({ connectionString: TEST_PG_ADMIN_URL });
  await admin.connect();
  try {
    const found = await admin.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [DB]);
    if (!found.rowCount) await admin.query(`CREATE DATABASE "${DB}"`);
  } finally {
    await admin.end();
  }
  const u = new URL(TEST_PG_ADMIN_URL);
  u.pathname = `/${DB}`;
  return u.toString();
}

async function main(): Promise<void> {
  const url = await ensureDatabase();
  const ds = createDataSource({ url, poolSize: 3, applicationName: 'gmg-explain-volume' });
  await ds.initialize();
  try {
    await runMigrations(ds);
    if (!(await volumeSeeded(ds, TASKS))) {
      const r = await seedVolume(ds, { tasks: TASKS, ledger: LEDGER }, (line) => console.log(line));
      console.log(
        `explain-volume: seeded ${r.tasks} tasks, ${r.ledger} ledger entries, ${r.webhookDeliveries} webhook deliveries, ${r.creditLeases} credit leases on ${r.accounts} accounts in ${r.seconds.toFixed(0)} s`,
      );
    } else console.log(`explain-volume: reusing ${DB}`);
    if (process.env.VOLUME_SEED_ONLY === '1') return;
    const { backlog, results } = await explainAll(ds, [...periodicQueries(), ...consoleQueries()]);
    const big = (t: string) => Math.round(backlog.rows[t] ?? 0).toLocaleString('en-US');
    console.log(
      `\nexplain-volume: tasks ${big('tasks')}, ledger_entries ${big('ledger_entries')}, webhook_deliveries ${big('webhook_deliveries')}; ` +
        `open ${backlog.open}, unsettled ${backlog.unsettled}, keyed ${backlog.keyed}, active leases ${backlog.activeLeases}\n`,
    );
    for (const r of results) {
      console.log(`--- ${r.label} (${r.caller}): ${r.verdict}${r.why.length ? ` — ${r.why.join('; ')}` : ''}`);
      for (const s of r.scans) console.log(`    ${s.node} on ${s.relation ?? '?'}${s.index ? ` using ${s.index}` : ''}: ${s.touched} rows`);
    }
    console.log(`\n${formatTable(results)}\n`);
    process.exitCode = results.some((r) => r.verdict !== 'bounded') ? 1 : 0;
  } finally {
    await ds.destroy();
    if (process.env.VOLUME_DROP === '1') {
      const admin = new Client({ connectionString: TEST_PG_ADMIN_URL });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS "${DB}" WITH (FORCE)`);
      await admin.end();
    }
  }
}

main().catch((e: unknown) => {
  console.error(`explain-volume: failed: ${e instanceof Error ? e.stack : String(e)}`);
  process.exit(1);
});
