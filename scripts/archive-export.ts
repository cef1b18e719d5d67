/**
 * Moves the retention archives out of the database whole (docs/operations.md, "Growth: archives leave whole"):
 * rotates `tasks_archive` and `ledger_archive` (each renamed with a timestamp, an empty one of the same shape in its
 * place), writes each rotated table as gzip-compressed NDJSON to ARCHIVE_EXPORT_DIR/<table>/<name>.ndjson.gz, checks
 * the line count against the table, uploads the file to S3-compatible object storage when ARCHIVE_EXPORT_S3_URL is
 * set (s3://bucket/prefix; read back: size and ETag), then drops the table. Run it from cron (daily, say) against
 * the direct Postgres endpoint; a run that stopped half-way (a crash, a failed or wrong upload) is finished by the next.
 *   DATABASE_URL=postgres://… ARCHIVE_EXPORT_DIR=/backup/gmg [ARCHIVE_EXPORT_S3_URL=s3://bucket/gmg-archives
 *   ARCHIVE_EXPORT_S3_ENDPOINT=https://… ARCHIVE_EXPORT_S3_REGION=eu-west-1 ARCHIVE_EXPORT_S3_FORCE_PATH_STYLE=true]
 *   node --import tsx scripts/archive-export.ts [--no-rotate]
 * S3 credentials come from the AWS SDK's own chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile, web
 * identity, the instance role); none is read here.
 */
import { createDataSource, createS3ArchiveTarget, exportArchives, type S3ArchiveTarget } from '@gmg/db';

async function s3Target(): Promise<S3ArchiveTarget | undefined> {
  const url = process.env.ARCHIVE_EXPORT_S3_URL;
  if (!url) return undefined;
  const u = new URL(url);
  if (u.protocol !== 's3:' || !u.hostname) throw new Error(`ARCHIVE_EXPORT_S3_URL ${url}: expected s3://bucket[/prefix]`);
  return createS3ArchiveTarget({
    bucket: u.hostname,
    prefix: decodeURIComponent(u.pathname.replace(/^\/+/, '')),
    endpoint: process.env.ARCHIVE_EXPORT_S3_ENDPOINT || undefined,
    region: process.env.ARCHIVE_EXPORT_S3_REGION || undefined,
    forcePathStyle: process.env.ARCHIVE_EXPORT_S3_FORCE_PATH_STYLE === 'true',
  });
}

async function main(): Promise<void> {
  const dir = process.env.ARCHIVE_EXPORT_DIR;
  if (!dir) throw new Error('ARCHIVE_EXPORT_DIR is required (where the .ndjson.gz files go)');
  const target = await s3Target();
  const ds = createDataSource({
    url: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gmg',
    poolSize: 2,
    applicationName: 'gmg-archive-export',
  });
  await ds.initialize();
  try {
    for (const e of await exportArchives(ds, dir, { rotate: !process.argv.includes('--no-rotate'), targets: target ? [target] : [] }))
      console.log(`archive-export: ${e.from}: ${e.rows} rows → ${[e.file, ...e.stored].join(' and ')} in ${e.seconds.toFixed(1)} s, table dropped`);
  } finally {
    target?.destroy();
    await ds.destroy();
  }
}

main().catch((e: unknown) => {
  console.error(`archive-export: failed: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
