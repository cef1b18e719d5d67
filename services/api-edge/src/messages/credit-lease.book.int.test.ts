import { AccountRepository, ApiKeyRepository, ChatCallRepository, CreditLeaseRepository, newTaskId } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createTestDatabase, waitFor, type TestDatabase } from '@gmg/testing';
import { ChatCallSweeper } from './chat-call.sweeper';
import { CreditLeaseBook } from './credit-lease.book';

/** The edge's lease book against real Postgres: concurrency, a lease swept under a running call, a crashed edge. */
let db: TestDatabase;
let leases: CreditLeaseRepository;
let calls: ChatCallRepository;
const logger = createLogger({ service: 'lease-test', level: 'silent' });

beforeAll(async () => {
  db = await createTestDatabase('gmg_lease');
  leases = new CreditLeaseRepository(db.dataSource);
  calls = new ChatCallRepository(db.dataSource);
});
afterAll(async () => {
  await db?.drop();
});

async function account(balance: bigint) {
  const a = await new AccountRepository(db.dataSource).create({ name: 'book' });
  await new AccountRepository(db.dataSource).topup(a.id, balance, {});
  const { key } = await new ApiKeyRepository(db.dataSource).create({ accountId: a.id, name: 'k', models: null });
  return { accountId: a.id, apiKeyId: key.id };
}
const money = async (id: string) => {
  const [r] = await db.dataSource.query(`SELECT available::text, held::text, spent::text FROM accounts WHERE id = $1`, [id]);
  return { available: BigInt(r.available), held: BigInt(r.held), spent: BigInt(r.spent) };
};
const book = (ttlMs = 30_000, targetMinor = 1000n) => new CreditLeaseBook({ leases, calls, logger, targetMinor, ttlMs, flushDelayMs: 5 });
const finished = (a: { accountId: string; apiKeyId: string }, cost: bigint) => ({
  id: newTaskId(),
  accountId: a.accountId,
  apiKeyId: a.apiKeyId,
  model: 'lumen-chat-1',
  requestedModel: 'lumen-chat-1',
  status: 'completed' as const,
  cost,
  request: {},
  priceSnapshot: {},
  result: null,
  error: null,
  channelId: null,
  startedAt: new Date(),
});

it('200 concurrent reservations never promise more than the balance; each call charged once; everything returns at close', async () => {
  const a = await account(5000n);
  const b = book();
  const results = await Promise.allSettled(Array.from({ length: 200 }, () => b.reserve(a.accountId, 100n)));
  const ok = results.filter((r): r is PromiseFulfilledResult<Awaited<ReturnType<typeof b.reserve>>> => r.status === 'fulfilled').map((r) => r.value);
  expect(ok.length).toBe(50);
  expect(results.filter((r) => r.status === 'rejected').every((r) => (r as PromiseRejectedResult).reason.code === 'payment_required')).toBe(true);
  for (const r of ok) b.finish(r, finished(a, 30n));
  await b.close();
  const [{ n, s }] = await db.dataSource.query(
    `SELECT count(*)::int AS n, sum(amount)::text AS s FROM ledger_entries WHERE account_id = $1 AND kind = 'capture'`,
    [a.accountId],
  );
  expect(n).toBe(50);
  expect(BigInt(s)).toBe(50n * 30n);
  expect(await money(a.accountId)).toEqual({ available: 5000n - 1500n, held: 0n, spent: 1500n });
});

it('a lease swept while a call runs on it: the call is charged directly from the balance, once', async () => {
  const a = await account(1000n);
  const b = book();
  const r = await b.reserve(a.accountId, 200n);
  const [lease] = await db.dataSource.query(`SELECT id FROM credit_leases WHERE account_id = $1`, [a.accountId]);
  expect(await leases.close(lease.id)).toBe(1000n);
  b.finish(r, finished(a, 70n));
  await b.flush();
  await waitFor(async () => (await money(a.accountId)).spent === 70n, { timeoutMs: 5000, what: 'the direct charge' });
  await b.close();
  expect(await money(a.accountId)).toEqual({ available: 930n, held: 0n, spent: 70n });
});

it('a crashed edge (never closes, never renews): its lease expires, a sweeper returns the unspent money', async () => {
  const a = await account(1000n);
  const dead = book(3000, 600n);
  const r = await dead.reserve(a.accountId, 100n);
  dead.finish(r, finished(a, 40n));
  await dead.flush();
  expect(await money(a.accountId)).toEqual({ available: 400n, held: 560n, spent: 40n });
  // the edge dies here: no renewal, no close
  clearInterval((dead as unknown as { renewTimer?: NodeJS.Timeout }).renewTimer);
  const sweeper = new ChatCallSweeper(calls, leases, 10, logger);
  await waitFor(async () => (await sweeper.sweep()) > 0 || (await money(a.accountId)).held === 0n, {
    timeoutMs: 10_000,
    intervalMs: 200,
    what: 'the lease swept',
  });
  expect(await money(a.accountId)).toEqual({ available: 960n, held: 0n, spent: 40n });
});
