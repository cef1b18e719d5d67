/**
 * Moves the retention archives out of the database whole (docs/operations.md, "Growth: archives leave whole"):
 * rotates `tasks_archive` and `ledger_archive` (each renamed with a timestamp, an empty one of the same shape in its
 * place), writes each rotated table as gzip-compressed NDJSON to ARCHIVE_EXPORT_DIR/<table>/<name>.ndjson.gz, checks
 * the line count against the table, then drops it. Run it from cron (daily, say) against the direct Postgres endpoint;
 * a run that stopped half-way is finished by the next. Ship the files to object storage with your own tooling.
 *   DATABASE_URL=postgres://… ARCHIVE_EXPORT_DIR=/backup/gmg node --import tsx scripts/archive-export.ts [--no-rotate]
 */
import { createDataSource, exportArchives } from '@gmg/db';

async function main(): Promise<void> {
  const dir = process.env.ARCHIVE_EXPORT_DIR;
  if (!dir) throw new Error('ARCHIVE_EXPORT_DIR is required (where the .ndjson.gz files go)');
  const ds = createDataSource({
    url: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gmg',
    poolSize: 2,
    applicationName: 'gmg-archive-export',
  });
  await ds.initialize();
  try {
    for (const e of await exportArchives(ds, dir, { rotate: !process.argv.includes('--no-rotate') }))
      console.log(`archive-export: ${e.from}: ${e.rows} rows → ${e.file} in ${e.seconds.toFixed(1)} s, table dropped`);
  } finally {
    await ds.destroy();
  }
}

main().catch((e: unknown) => {
  console.error(`archive-export: failed: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
