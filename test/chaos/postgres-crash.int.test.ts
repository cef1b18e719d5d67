/**
 * Issue 36 item 3: a chat call's open row (written before its first byte) is committed asynchronously when its
 * statement carries no record (CreditLeaseRepository.write, the edge's one statement per lease: `synchronous_commit
 * = off` for that statement alone; with a record it commits synchronously). This is what a crash of
 * Postgres itself costs, on a Postgres of the test's own (test/chaos/infra.ts: initdb on a free port, killed -9 —
 * backends and postmaster — so the WAL buffers in its shared memory are lost, then crash recovery):
 * - an open row committed before any later synchronous commit on the server survives (that commit flushed the WAL
 *   up to it): the window is the async rows after the last synchronous commit, at most 3 × wal_writer_delay;
 * - a call whose open row was lost and whose edge lives on is written again by its record (`write` inserts a
 *   missing row) and charged exactly once;
 * - a call whose open row was lost and whose edge died too is not charged: the lease's close releases its
 *   reservation (money of ours, never the client's), and the ledger invariants hold either way.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import {
  AccountRepository,
  ApiKeyRepository,
  CreditLeaseRepository,
  createDataSource,
  newTaskId,
  runMigrations,
  type LeasedCall,
  type OpenedCall,
} from '@gmg/db';
import { checkLedger, waitFor } from '@gmg/testing';
import { ChaosPostgres, removeDir } from './infra';

let root: string;
let pg: ChaosPostgres;
let ds: DataSource;

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'gmg-pg-crash-'));
  pg = await ChaosPostgres.start(root);
  ds = createDataSource({ url: await pg.createDatabase('gmg'), poolSize: 2, applicationName: 'gmg-pg-crash-test' });
  await ds.initialize();
  await runMigrations(ds);
}, 120_000);

afterAll(async () => {
  if (ds?.isInitialized) await ds.destroy();
  await pg?.stop();
  if (root) removeDir(root);
});

/** Crash, restart (crash recovery), and wait until this data source's pool reaches the new server. */
async function crashAndRecover(): Promise<void> {
  await pg.crash();
  await pg.launch();
  await waitFor(async () => ((await ds.query('SELECT 1 AS ok').catch(() => null)) ? true : undefined), {
    timeoutMs: 30_000,
    intervalMs: 100,
    what: 'the data source reconnected after the crash',
  });
}

const rowOf = async (id: string): Promise<{ status: string } | undefined> =>
  ((await ds.query(`SELECT status FROM tasks WHERE id = $1`, [id])) as Array<{ status: string }>)[0];
const capturesOf = async (id: string): Promise<number> =>
  Number(((await ds.query(`SELECT count(*)::int AS n FROM ledger_entries WHERE task_id = $1 AND kind = 'capture'`, [id])) as Array<{ n: number }>)[0]?.n);

it('a Postgres crash loses at most the open rows after its last synchronous commit; each call is still charged at most once, and once when its edge lives', async () => {
  const leases = new CreditLeaseRepository(ds);
  const accounts = new AccountRepository(ds);
  const account = await accounts.create({ name: 'pg-crash' });
  await accounts.topup(account.id, 100_000n, {});
  const { key } = await new ApiKeyRepository(ds).create({ accountId: account.id, name: 'k', models: null });
  const leaseId = `lease_${newTaskId().slice(5)}`;
  expect(await leases.grant({ id: leaseId, accountId: account.id, edgeId: 'edge-a', min: 1000n, want: 50_000n, ttlMs: 60_000 })).not.toBeNull();
  const opened = (): OpenedCall => ({
    id: newTaskId(),
    accountId: account.id,
    apiKeyId: key.id,
    model: 'lumen-chat-1',
    requestedModel: 'lumen-chat-1',
    reserved: 1000n,
    request: {},
    priceSnapshot: {},
    startedAt: new Date(),
  });
  const finished = (c: OpenedCall, cost: bigint): LeasedCall => ({
    ...c,
    status: 'completed',
    cost,
    result: { cost: cost.toString() },
    error: null,
    channelId: null,
  });

  // the edge's statement: a lease's open rows and records (asynchronous while it carries no record)
  const write = async (opens: OpenedCall[], records: LeasedCall[]) => (await leases.write(leaseId, opens, records)).active;
  // A: opened, then a synchronous commit (the lease's renewal) — its row is durable from then on
  const a = opened();
  expect(await write([a], [])).toBe(true);
  expect((await leases.renew([leaseId], 60_000)).has(leaseId)).toBe(true);
  // B: opened last, then the crash at once — its row may be lost (async commit) or not (the WAL writer was quicker)
  const b = opened();
  expect(await write([b], [])).toBe(true);
  await crashAndRecover();

  expect(await rowOf(a.id)).toEqual({ status: 'processing' });
  const bSurvived = (await rowOf(b.id)) !== undefined;
  // the edge lived on: both calls end and its record batch writes them (B's row again when it was lost)
  expect(await write([], [finished(a, 300n), finished(b, 400n)])).toBe(true);
  expect(await rowOf(b.id)).toEqual({ status: 'completed' });
  expect([await capturesOf(a.id), await capturesOf(b.id)]).toEqual([1, 1]);

  // C: opened, crash at once, and its edge is gone too: the lease's close (a sweeper) charges what it finds
  const c = opened();
  expect(await write([c], [])).toBe(true);
  await crashAndRecover();
  const cSurvived = (await rowOf(c.id)) !== undefined;
  expect(await leases.close(leaseId)).not.toBeNull();
  // a surviving row ends failed (edge lost) and is charged what it journalled (nothing): at most once, never more
  expect(await capturesOf(c.id)).toBe(cSurvived ? 1 : 0);
  const [money] = (await ds.query(`SELECT available::text, held::text, spent::text FROM accounts WHERE id = $1`, [account.id])) as Array<
    Record<string, string>
  >;
  // A and B were charged (300 + 400); C cost nothing; everything else came back
  expect(money).toEqual({ available: String(100_000 - 700), held: '0', spent: '700' });
  expect(await checkLedger(ds, { accounts: [account.id], leasesClosed: true })).toEqual([]);
  // what the crash cost, for the record (docs/messages.md "What a crash costs"): which async rows were lost
  process.stdout.write(`postgres crash: open row B ${bSurvived ? 'survived' : 'lost (rewritten by its record)'}; C ${cSurvived ? 'survived' : 'lost'}\n`);
}, 180_000);
