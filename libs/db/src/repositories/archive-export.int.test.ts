import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { createTestDatabase, seedVolume, startS3TestServer, type S3TestServer, type TestDatabase } from '@gmg/testing';
import { exportArchives } from './archive-export';
import { S3ArchiveTarget } from './archive-s3';
import { RetentionRepository } from './retention.repository';

/**
 * The archives leave the database whole: rotated, exported as NDJSON, dropped — while retention keeps archiving into
 * the fresh tables, and no money is lost on the way (every ledger entry is in exactly one of ledger_entries,
 * ledger_archive or an exported file).
 */
describe('archive export (rotate, NDJSON, drop)', () => {
  let db: TestDatabase;
  let dir: string;
  beforeAll(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(path.join(tmpdir(), 'gmg-archive-'));
    await seedVolume(db.dataSource, { tasks: 4000, ledger: 8500, accounts: 10, days: 60 });
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await db?.drop();
  });
  const q = <T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]> => db.dataSource.query(sql, params);
  const policy = { taskDays: 30, ledgerDays: 30, webhookDeliveryDays: 0 };
  const lines = (table: string): Array<Record<string, unknown>> =>
    readdirSync(path.join(dir, table))
      .filter((f) => f.endsWith('.ndjson.gz'))
      .flatMap((f) =>
        gunzipSync(readFileSync(path.join(dir, table, f)))
          .toString('utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Record<string, unknown>),
      );

  it('exports what retention archived, drops the rotated tables, and retention goes on into the fresh ones', async () => {
    const [before] = await q<{ entries: number; amount: string }>(`SELECT count(*)::int AS entries, sum(amount)::text AS amount FROM ledger_entries`);
    const retention = new RetentionRepository(db.dataSource);
    // the first half of the backlog, then an export while the second half is archived at the same time
    const first = await retention.sweep(policy, 200, 0);
    expect(first.archivedTasks).toBe(200);
    const [exported, second] = await Promise.all([exportArchives(db.dataSource, dir, { stamp: '20261128010000' }), retention.sweep(policy, 200)]);
    expect(exported.map((e) => e.from)).toEqual(['tasks_archive_20261128010000', 'ledger_archive_20261128010000']);
    expect(second.archivedTasks).toBeGreaterThan(0);
    // nothing rotated is left; the live archives are tables of the same shape and hold what came after the rotation
    expect(await q(`SELECT relname FROM pg_class WHERE relname ~ '_archive_[0-9]{14}$'`)).toEqual([]);
    const [after] = await q<{ tasks: number }>(`SELECT count(*)::int AS tasks FROM tasks_archive`);
    const taskLines = lines('tasks_archive');
    expect(taskLines.length).toBe(exported[0]!.rows);
    expect(taskLines.length + after!.tasks).toBe(first.archivedTasks + second.archivedTasks);
    expect(new Set(taskLines.map((l) => l.id)).size).toBe(taskLines.length);
    expect(taskLines[0]).toEqual(
      expect.objectContaining({ id: expect.stringMatching(/^task_/), task: expect.objectContaining({ status: expect.any(String) }) }),
    );
    // money: every entry once, in the ledger, the live archive or a file
    const entryLines = lines('ledger_archive');
    const [live] = await q<{ entries: number; amount: string }>(`
      SELECT ((SELECT count(*) FROM ledger_entries) + (SELECT count(*) FROM ledger_archive))::int AS entries,
             ((SELECT sum(amount) FROM ledger_entries) + (SELECT COALESCE(sum(amount), 0) FROM ledger_archive))::text AS amount`);
    expect(live!.entries + entryLines.length).toBe(before!.entries);
    expect(BigInt(live!.amount) + entryLines.reduce((s, l) => s + BigInt(l.amount as number), 0n)).toBe(BigInt(before!.amount));
    // the append-only trigger checks the fresh ledger_archive: an entry not archived first still cannot be deleted
    await expect(q(`DELETE FROM ledger_entries WHERE id = (SELECT min(id) FROM ledger_entries)`)).rejects.toThrow(/append-only/);
  });

  it('a run that stopped before its drop is finished by the next (export only, no rotation)', async () => {
    await q(`CREATE TABLE tasks_archive_20261128020000 (LIKE tasks_archive INCLUDING ALL)`);
    await q(
      `INSERT INTO tasks_archive_20261128020000 (id, account_id, created_at, task) SELECT 'task_left' || i, a.id, now(), '{}'::jsonb FROM generate_series(1, 3) i, (SELECT id FROM accounts LIMIT 1) a`,
    );
    const done = await exportArchives(db.dataSource, dir, { rotate: false });
    expect(done.map((e) => [e.from, e.rows])).toEqual([['tasks_archive_20261128020000', 3]]);
    expect(await q(`SELECT relname FROM pg_class WHERE relname ~ '_archive_[0-9]{14}$'`)).toEqual([]);
  });
});

/**
 * The archives also go to S3-compatible object storage (through the AWS SDK, against libs/testing's loopback S3
 * server): a rotated table is dropped only once its object is read back with the file's size and ETag; a store that
 * keeps the wrong bytes or fails leaves the table for the next run, which finishes it.
 */
describe('archive export to S3 (read back before the drop)', () => {
  let db: TestDatabase;
  let dir: string;
  let s3: S3TestServer;
  let target: S3ArchiveTarget;
  beforeAll(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(path.join(tmpdir(), 'gmg-archive-s3-'));
    s3 = await startS3TestServer();
    target = new S3ArchiveTarget({
      bucket: 'archives',
      prefix: 'gmg',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret-for-the-test' },
      partSize: 5 * 1024 * 1024,
    });
    await seedVolume(db.dataSource, { tasks: 600, ledger: 1300, accounts: 5, days: 60 });
    await new RetentionRepository(db.dataSource).sweep({ taskDays: 30, ledgerDays: 30, webhookDeliveryDays: 0 }, 1000);
  });
  afterAll(async () => {
    target?.destroy();
    await s3?.close();
    rmSync(dir, { recursive: true, force: true });
    await db?.drop();
  });
  const rotated = async (): Promise<string[]> =>
    ((await db.dataSource.query(`SELECT relname FROM pg_class WHERE relname ~ '_archive_[0-9]{14}$' ORDER BY relname`)) as Array<{ relname: string }>).map(
      (r) => r.relname,
    );

  it('a store that keeps other bytes fails the run and keeps the tables; the next run stores them whole and drops them', async () => {
    const [archived] = (await db.dataSource.query(`SELECT count(*)::int AS n FROM tasks_archive`)) as Array<{ n: number }>;
    expect(archived!.n).toBeGreaterThan(0);
    s3.tamper = (_key, body) => body.subarray(0, body.length - 1); // one byte lost
    await expect(exportArchives(db.dataSource, dir, { stamp: '20261128030000', targets: [target] })).rejects.toThrow(/stored \d+ bytes, the file has \d+/);
    expect(await rotated()).toEqual(['tasks_archive_20261128030000']); // not dropped (ledger_archive not reached yet)
    s3.tamper = (_key, body) => Buffer.concat([body.subarray(0, 10), Buffer.from([body[10]! ^ 0xff]), body.subarray(11)]); // one byte flipped
    await expect(exportArchives(db.dataSource, dir, { rotate: false, targets: [target] })).rejects.toThrow(/ETag "[0-9a-f]{32}" is not the file's/);
    expect(await rotated()).toEqual(['tasks_archive_20261128030000']);

    s3.tamper = undefined;
    const done = await exportArchives(db.dataSource, dir, { stamp: '20261128030100', targets: [target] });
    expect(done.map((e) => e.from)).toEqual(['tasks_archive_20261128030000', 'tasks_archive_20261128030100', 'ledger_archive_20261128030100']);
    expect(await rotated()).toEqual([]);
    const first = done[0]!;
    expect(first.rows).toBe(archived!.n);
    expect(first.stored).toEqual(['s3://archives/gmg/tasks_archive/tasks_archive_20261128030000.ndjson.gz']);
    for (const e of done) {
      const obj = s3.objects.get(e.stored[0]!.replace('s3://', ''));
      expect(obj?.body.equals(readFileSync(e.file))).toBe(true);
    }
    // read back before each drop: the last requests of each object are its PUT and then its HEAD
    expect(s3.log.filter((l) => l.startsWith('HEAD ')).length).toBe(5);
  });

  it('a large file goes up in parts (ETag of the parts) and a part the store keeps failing aborts the upload', async () => {
    const big = path.join(dir, 'big.bin');
    writeFileSync(big, randomBytes(11 * 1024 * 1024));
    const out = await target.store(big, 'test/big.bin');
    expect(out).toMatchObject({ location: 's3://archives/gmg/test/big.bin', bytes: 11 * 1024 * 1024, etag: expect.stringMatching(/^"[0-9a-f]{32}-3"$/) });
    expect(s3.log.filter((l) => l.startsWith('PUT /archives/gmg/test/big.bin?') && l.includes('partNumber=')).length).toBe(3);

    s3.failNext(/^PUT \/archives\/gmg\/test\/big2\.bin$/, 100); // every attempt at every part (the SDK retries 500s)
    await expect(target.store(big, 'test/big2.bin')).rejects.toThrow();
    expect(s3.log.some((l) => l.startsWith('DELETE /archives/gmg/test/big2.bin?uploadId='))).toBe(true);
    expect(s3.objects.has('archives/gmg/test/big2.bin')).toBe(false);
  });
});
