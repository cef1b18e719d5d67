/**
 * Retention at volume (docs/operations.md, "Growth"): on the database scripts/explain-volume.ts seeded (VOLUME_DB,
 * default gmg_volume_<VOLUME_TASKS>), runs the billing sweep's retention (RetentionRepository.sweep, TASK_RETENTION_DAYS
 * 30) from 1 and then from RETENTION_WORKERS (default 2) concurrent workers — as that many billing replicas would —
 * for RETENTION_SECONDS (default 60) each, and reports tasks and ledger entries moved per second, then what the
 * deletes left for vacuum: dead rows, the time of VACUUM on `tasks` and `ledger_entries`, and the table and index sizes.
 *   VOLUME_TASKS=10000000 node --import tsx scripts/retention-volume.ts
 * It MOVES rows (that is the measurement): run explain-volume.ts first, or on a copy.
 */
import { createDataSource, RetentionRepository } from '@gmg/db';
import { TEST_PG_ADMIN_URL } from '@gmg/testing';
import type { DataSource } from 'typeorm';

const TASKS = Number(process.env.VOLUME_TASKS ?? 10_000_000);
const DB = process.env.VOLUME_DB ?? `gmg_volume_${TASKS}`;
const SECONDS = Number(process.env.RETENTION_SECONDS ?? 60);
const WORKERS = Number(process.env.RETENTION_WORKERS ?? 2);
const policy = { taskDays: 30, ledgerDays: 30, webhookDeliveryDays: 30 };

async function phase(workers: number): Promise<{ tasks: number; entries: number; deliveries: number; seconds: number; errors: number }> {
  const u = new URL(TEST_PG_ADMIN_URL);
  u.pathname = `/${DB}`;
  const sources: DataSource[] = [];
  for (let i = 0; i < workers; i++) {
    const ds = createDataSource({ url: u.toString(), poolSize: 4, applicationName: `gmg-retention-${i}`, statementTimeoutMs: 30_000 });
    await ds.initialize();
    sources.push(ds);
  }
  const t0 = Date.now();
  const until = t0 + SECONDS * 1000;
  let tasks = 0;
  let entries = 0;
  let deliveries = 0;
  let errors = 0;
  try {
    await Promise.all(
      sources.map(async (ds) => {
        const repo = new RetentionRepository(ds);
        for (let beat = 0; beat < 100_000 && Date.now() < until; beat++) {
          // one billing sweep beat: every table drained for up to the sweep's budget (here: what is left of the phase)
          const r = await repo.sweep(policy, 1000, Math.max(0, until - Date.now())).catch(() => {
            errors++;
            return undefined;
          });
          if (!r) continue;
          tasks += r.archivedTasks;
          entries += r.archivedLedgerEntries;
          deliveries += r.prunedDeliveries;
          if (!r.archivedTasks && !r.archivedLedgerEntries && !r.prunedDeliveries) break;
        }
      }),
    );
  } finally {
    for (const ds of sources) await ds.destroy();
  }
  return { tasks, entries, deliveries, seconds: (Date.now() - t0) / 1000, errors };
}

async function main(): Promise<void> {
  const u = new URL(TEST_PG_ADMIN_URL);
  u.pathname = `/${DB}`;
  const ds = createDataSource({ url: u.toString(), poolSize: 2, applicationName: 'gmg-retention-volume' });
  await ds.initialize();
  const q = (sql: string) => ds.query(sql) as Promise<Array<Record<string, unknown>>>;
  const sizes = async (label: string): Promise<void> => {
    const rows = await q(`
      SELECT c.relname, pg_size_pretty(pg_table_size(c.oid)) AS heap, pg_size_pretty(pg_indexes_size(c.oid)) AS indexes,
             (SELECT count(*) FROM pg_index i WHERE i.indrelid = c.oid) AS n_indexes, s.n_live_tup, s.n_dead_tup
      FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid
      WHERE c.relname IN ('tasks','ledger_entries','webhook_deliveries','tasks_archive','ledger_archive') ORDER BY c.relname`);
    console.log(`\n${label}`);
    for (const r of rows)
      console.log(
        `  ${String(r.relname).padEnd(20)} heap ${String(r.heap).padStart(8)}  ${String(r.n_indexes).padStart(2)} indexes ${String(r.indexes).padStart(8)}  live ${String(r.n_live_tup)}  dead ${String(r.n_dead_tup)}`,
      );
  };
  try {
    await sizes('before');
    for (const w of [1, WORKERS]) {
      const r = await phase(w);
      const rate = (n: number) => (n / r.seconds).toFixed(0);
      console.log(
        `\nretention-volume: ${w} worker(s), ${r.seconds.toFixed(1)} s: ${r.tasks} tasks (${rate(r.tasks)}/s) with their entries, ` +
          `${r.entries} untasked entries (${rate(r.entries)}/s), ${r.deliveries} deliveries (${rate(r.deliveries)}/s), ${r.errors} failed sweeps`,
      );
    }
    await sizes('after the moves (before vacuum)');
    for (const t of ['tasks', 'ledger_entries']) {
      const t0 = Date.now();
      await q(`VACUUM ${t}`);
      console.log(`retention-volume: VACUUM ${t} took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
    await sizes('after vacuum');
  } finally {
    await ds.destroy();
  }
}

main().catch((e: unknown) => {
  console.error(`retention-volume: failed: ${e instanceof Error ? e.stack : String(e)}`);
  process.exit(1);
});
