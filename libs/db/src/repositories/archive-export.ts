import { createWriteStream, mkdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import type { DataSource } from 'typeorm';
import type { ArchiveTarget } from './archive-s3';
import type { Row } from './sql';

/** The archives retention fills (tasks_archive, ledger_archive): the gateway writes them and never reads them. */
const ARCHIVES = ['tasks_archive', 'ledger_archive'] as const;
/** Rows read per statement while exporting (a keyset page along the primary key). */
const EXPORT_PAGE = 10_000;

export interface ExportedArchive {
  table: string;
  /** The rotated table the rows were exported from (dropped once the file is complete). */
  from: string;
  file: string;
  rows: number;
  /** Where else the file is, each read back equal (ArchiveTarget.store): `s3://bucket/key`. */
  stored: string[];
  seconds: number;
}

export interface ExportOptions {
  /** false: no rotation, only finish rotated tables left by an earlier run. */
  rotate?: boolean;
  /** The rotation's name suffix (yyyymmddhhmmss); now by default. */
  stamp?: string;
  /** Object stores the file also goes to (S3ArchiveTarget); the table is dropped only once each confirmed it. */
  targets?: readonly ArchiveTarget[];
}

/**
 * Archives leave the database whole, never row by row (issue 38, docs/operations.md "Growth"):
 * 1. **rotate** — in one short transaction (lock_timeout 5 s), the live archive is renamed `<table>_<yyyymmddhhmmss>`
 *    and an empty one of the same shape (`LIKE … INCLUDING ALL`) takes its name: retention's next batch writes into
 *    the new one. The lock waits only for a retention batch in flight (one short transaction); the hot tables are
 *    not touched. The append-only trigger finds `ledger_archive` by name, so it checks the new table from then on;
 *    a batch copies and deletes in one transaction, so no entry is ever split across the two;
 * 2. **export** — the rotated table is read in keyset pages of its primary key and written as gzip-compressed NDJSON
 *    (one `row_to_json` per line) to `<dir>/<table>/<rotated name>.ndjson.gz`, written to a `.part` file first and
 *    renamed once complete and its line count equals the table's row count;
 * 3. **store** — the file goes to each target (`targets`: S3-compatible object storage through the AWS SDK,
 *    archive-s3.ts) as `<table>/<rotated name>.ndjson.gz`, and is read back (size and ETag) before going on;
 * 4. **drop** — the rotated table is dropped: one catalog operation, no dead rows, nothing for vacuum.
 * The rotated table is the watermark: it exists until every copy is confirmed, so a run that stops (a crash, a store
 * that failed or answered a wrong size or ETag) leaves it behind, and the next run exports, stores and drops it first
 * (`rotate: false` does only that). Storing again is idempotent (same key, same bytes).
 */
export async function exportArchives(ds: DataSource, dir: string, opts: ExportOptions = {}): Promise<ExportedArchive[]> {
  const stamp = opts.stamp ?? new Date().toISOString().replace(/\D/g, '').slice(0, 14);
  const out: ExportedArchive[] = [];
  for (const table of ARCHIVES) {
    if (opts.rotate !== false) await rotate(ds, table, `${table}_${stamp}`);
    const leftovers = (await ds.query(
      `SELECT relname FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace AND relname ~ $1 ORDER BY relname`,
      [`^${table}_[0-9]{14}$`],
    )) as Array<{ relname: string }>;
    for (const { relname } of leftovers) out.push(await exportAndDrop(ds, table, relname, dir, opts.targets ?? []));
  }
  return out;
}

async function rotate(ds: DataSource, table: string, rotated: string): Promise<void> {
  await ds.transaction(async (m) => {
    await m.query(`SET LOCAL lock_timeout = '5s'`);
    await m.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    await m.query(`ALTER TABLE ${table} RENAME TO ${rotated}`);
    await m.query(`CREATE TABLE ${table} (LIKE ${rotated} INCLUDING ALL)`);
  });
}

async function exportAndDrop(ds: DataSource, table: string, rotated: string, dir: string, targets: readonly ArchiveTarget[]): Promise<ExportedArchive> {
  const t0 = Date.now();
  mkdirSync(path.join(dir, table), { recursive: true });
  const file = path.join(dir, table, `${rotated}.ndjson.gz`);
  const gzip = createGzip();
  const sink = createWriteStream(`${file}.part`);
  gzip.pipe(sink);
  let rows = 0;
  let after: string | null = null;
  for (let page = 0; page < 1e9; page++) {
    const keyType = table === 'ledger_archive' ? 'bigint' : 'text';
    const batch: Row[] = await ds.query(
      `SELECT id::text AS key, row_to_json(a)::text AS line FROM ${rotated} a ${after === null ? '' : `WHERE a.id > $1::${keyType}`}
       ORDER BY a.id LIMIT ${EXPORT_PAGE}`,
      after === null ? [] : [after],
    );
    for (const r of batch) if (!gzip.write(`${r.line as string}\n`)) await once(gzip, 'drain');
    rows += batch.length;
    if (batch.length < EXPORT_PAGE) break;
    after = batch[batch.length - 1]!.key as string;
  }
  gzip.end();
  await once(sink, 'close');
  const [{ n }] = (await ds.query(`SELECT count(*)::int AS n FROM ${rotated}`)) as Array<{ n: number }>;
  if (n !== rows) throw new Error(`export of ${rotated}: ${rows} lines written, ${n} rows in the table; kept for the next run`);
  renameSync(`${file}.part`, file);
  const stored: string[] = [];
  for (const t of targets) stored.push((await t.store(file, `${table}/${rotated}.ndjson.gz`)).location);
  await ds.query(`DROP TABLE ${rotated}`);
  return { table, from: rotated, file, rows, stored, seconds: (Date.now() - t0) / 1000 };
}
