import fc from 'fast-check';
import { createTestDatabase, type TestDatabase } from '@gmg/testing';
import { newTaskId } from '../ids';
import { AccountRepository } from './account.repository';
import { ApiKeyRepository } from './api-key.repository';
import { ChatCallRepository } from './chat-call.repository';
import type { Row } from './sql';

/**
 * The chat money path under random concurrent calls: holds racing for one balance, and every call settled by its
 * edge and, at the same time, by the crash sweeper (and duplicated). Checked after every run against Postgres:
 * never below zero, `available + held + spent = topups`, and per call exactly one hold, one capture, one release
 * with capture + release = hold.
 */
let db: TestDatabase;
let calls: ChatCallRepository;
beforeAll(async () => {
  db = await createTestDatabase();
  calls = new ChatCallRepository(db.dataSource);
});
afterAll(async () => {
  await db?.drop();
});

async function newAccount(balance: bigint): Promise<{ accountId: string; keyId: string }> {
  const account = await new AccountRepository(db.dataSource).create({ name: 'chat-prop' });
  if (balance > 0n) await new AccountRepository(db.dataSource).topup(account.id, balance, { reason: 'test' });
  const { key } = await new ApiKeyRepository(db.dataSource).create({ accountId: account.id, name: 'k', models: null });
  return { accountId: account.id, keyId: key.id };
}

const callArb = fc.record({
  hold: fc.integer({ min: 0, max: 400 }),
  cost: fc.integer({ min: 0, max: 500 }),
  ok: fc.boolean(),
  dupes: fc.integer({ min: 1, max: 3 }),
});

async function runCalls(balance: number, specs: Array<{ hold: number; cost: number; ok: boolean; dupes: number }>, overdue: boolean) {
  const { accountId, keyId } = await newAccount(BigInt(balance));
  const ids = specs.map(() => newTaskId());
  const opened = await Promise.allSettled(
    specs.map((s, i) =>
      calls.open({
        id: ids[i],
        accountId,
        apiKeyId: keyId,
        model: 'lumen-chat-1',
        requestedModel: 'lumen-chat-1',
        request: {},
        hold: BigInt(s.hold),
        priceSnapshot: {},
        deadlineAt: new Date(Date.now() + (overdue ? -1000 : 60_000)),
      }),
    ),
  );
  const live = ids.filter((_, i) => opened[i].status === 'fulfilled');
  const wins = await Promise.all(
    specs.flatMap((s, i) => {
      if (opened[i].status !== 'fulfilled') return [];
      const edge = () => calls.settle(ids[i], { status: s.ok ? 'completed' : 'failed', cost: BigInt(s.cost), result: null, error: null, channelId: null });
      const sweep = async () =>
        overdue && (await calls.findOverdue(1000)).includes(ids[i])
          ? calls.settle(ids[i], { status: 'failed', cost: 0n, result: null, error: null, channelId: null })
          : false;
      return [...Array.from({ length: s.dupes }, () => edge()), sweep()].map(async (p) => ({ id: ids[i], won: await p }));
    }),
  );
  return { accountId, ids, live, wins, balance: BigInt(balance) };
}

async function check(r: Awaited<ReturnType<typeof runCalls>>, specs: Array<{ hold: number; cost: number }>) {
  const { ids } = r;
  const rows: Row[] = await db.dataSource.query(`SELECT id FROM tasks WHERE account_id = $1`, [r.accountId]);
  expect(rows.map((x) => x.id as string).sort()).toEqual([...r.live].sort());
  const [acc]: Row[] = await db.dataSource.query(`SELECT available::text, held::text, spent::text FROM accounts WHERE id = $1`, [r.accountId]);
  const available = BigInt(acc.available as string);
  const held = BigInt(acc.held as string);
  const spent = BigInt(acc.spent as string);
  expect(available >= 0n && held === 0n).toBe(true);
  expect(available + held + spent).toBe(r.balance);
  for (const id of r.live) expect(r.wins.filter((w) => w.id === id && w.won)).toHaveLength(1);
  const entries: Row[] = await db.dataSource.query(`SELECT task_id, kind, amount::text FROM ledger_entries WHERE account_id = $1 AND task_id IS NOT NULL`, [
    r.accountId,
  ]);
  let captured = 0n;
  for (const id of r.live) {
    const mine = entries.filter((e) => e.task_id === id);
    expect(mine.map((e) => e.kind).sort()).toEqual(['capture', 'hold', 'release']);
    const amount = (k: string) => BigInt(mine.find((e) => e.kind === k)!.amount as string);
    const spec = specs[ids.indexOf(id)];
    expect(amount('hold')).toBe(BigInt(spec.hold));
    expect(amount('capture') + amount('release')).toBe(amount('hold'));
    expect(amount('capture') <= BigInt(Math.min(spec.cost, spec.hold))).toBe(true);
    captured += amount('capture');
  }
  expect(spent).toBe(captured);
}

describe('chat calls: hold, capture, release (model-based, real Postgres)', () => {
  it('never below zero and every call settled exactly once when the edge, its duplicates and the sweeper race (120 runs)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 1000 }), fc.array(callArb, { minLength: 1, maxLength: 6 }), fc.boolean(), async (balance, specs, overdue) => {
        await check(await runCalls(balance, specs, overdue), specs);
      }),
      { numRuns: 120 },
    );
  }, 240_000);
});
