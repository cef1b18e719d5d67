import { AccountRepository, ApiKeyRepository, ChatCallRepository, CreditLeaseRepository, HoldBatchingTaskRepository, TaskLeaseBook } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createTestDatabase, testChatCall, testTask, waitFor, type TestDatabase } from '@gmg/testing';
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
const book = (ttlMs = 30_000, targetMinor = 1000n) => new CreditLeaseBook({ leases, calls, logger, targetMinor, ttlMs });
const finished = (a: { accountId: string; apiKeyId: string }, cost: bigint) => testChatCall(a, cost);

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

/** The repository's methods the book uses, each overridable (a statement that fails, a spy). */
function leasesWith(overrides: Partial<ConstructorParameters<typeof CreditLeaseBook>[0]['leases']>) {
  return {
    grant: leases.grant.bind(leases),
    write: leases.write.bind(leases),
    renew: leases.renew.bind(leases),
    close: leases.close.bind(leases),
    journal: leases.journal.bind(leases),
    ...overrides,
  };
}
const started = (a: { accountId: string; apiKeyId: string }) => {
  const { id, accountId, apiKeyId, model, requestedModel, request, priceSnapshot, startedAt } = finished(a, 0n);
  return { id, accountId, apiKeyId, model, requestedModel, request, priceSnapshot, startedAt };
};
const rowOf = async (id: string) => {
  const [r] = await db.dataSource.query(`SELECT status, lease_id, result FROM tasks WHERE id = $1`, [id]);
  return r as { status: string; lease_id: string; result: { cost_so_far?: string } } | undefined;
};

it('calls opened in one turn on two leases: the first goes alone, the rest in one statement per lease; each durable only once its row is written', async () => {
  const a = await account(1000n);
  const c = await account(1000n);
  const statements: Array<{ leaseId: string; n: number }> = [];
  const b = new CreditLeaseBook({
    leases: leasesWith({
      write: (leaseId, opened, done) => {
        if (done.length === 0) statements.push({ leaseId, n: opened.length });
        return leases.write(leaseId, opened, done);
      },
    }),
    calls,
    logger,
    targetMinor: 500n,
    ttlMs: 30_000,
    journalMs: 20,
  });
  const rs = await Promise.all([a, a, c, a, c].map((x) => b.reserve(x.accountId, 100n)));
  const cs = [a, a, c, a, c].map(started);
  const opened = rs.map((r, i) => b.open(r, cs[i]!, () => 7n));
  const rowsAtDurable = await Promise.all(opened.map(async ({ durable }, i) => (await durable, rowOf(cs[i]!.id))));
  for (const [i, row] of rowsAtDurable.entries()) expect(row).toMatchObject({ status: 'processing', lease_id: rs[i]!.lease.id });
  const [la, lc] = [rs[0]!.lease.id, rs[2]!.lease.id];
  expect(statements).toEqual([
    { leaseId: la, n: 1 },
    { leaseId: la, n: 2 },
    { leaseId: lc, n: 2 },
  ]);
  // a written call is marked opened: the journal reaches it
  await waitFor(async () => (await rowOf(cs[4]!.id))?.result.cost_so_far === '7', { timeoutMs: 5000, what: 'the journal entry' });
  rs.forEach((r, i) => b.finish(r, { ...finished(i === 2 || i === 4 ? c : a, 7n), id: cs[i]!.id }));
  await b.close();
  expect(await money(a.accountId)).toEqual({ available: 979n, held: 0n, spent: 21n });
  expect(await money(c.accountId)).toEqual({ available: 986n, held: 0n, spent: 14n });
});

it('a call opened on a lease swept meanwhile is not durable, and the lease retires: the next call gets a new lease', async () => {
  const a = await account(1000n);
  const b = book(30_000, 300n);
  const r = await b.reserve(a.accountId, 100n);
  await leases.close(r.lease.id);
  const call = started(a);
  await expect(b.open(r, call, () => 0n).durable).rejects.toThrow(/no longer active/);
  expect(await rowOf(call.id)).toBeUndefined();
  const next = await b.reserve(a.accountId, 100n);
  expect(next.lease.id).not.toBe(r.lease.id);
  b.finish(r, { ...finished(a, 0n), id: call.id });
  b.finish(next, finished(a, 10n));
  await b.close();
  expect(await money(a.accountId)).toEqual({ available: 990n, held: 0n, spent: 10n });
});

it('a record statement that fails (Postgres unreachable) loses no call: they are kept, sent again, each charged once', async () => {
  const a = await account(1000n);
  let failuresLeft = 2;
  const sent: string[][] = [];
  const b = new CreditLeaseBook({
    leases: leasesWith({
      write: (leaseId, opened, done) => {
        sent.push(done.map((x) => x.id));
        if (failuresLeft-- > 0) return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432'));
        return leases.write(leaseId, opened, done);
      },
    }),
    calls,
    logger,
    targetMinor: 500n,
    ttlMs: 30_000,
  });
  const rs = await Promise.all([1, 2, 3].map(() => b.reserve(a.accountId, 100n)));
  const done = rs.map(() => finished(a, 20n));
  rs.forEach((r, i) => b.finish(r, done[i]!));
  // the retry (a timer after the failures) writes them: no flush or close called
  await waitFor(async () => (await money(a.accountId)).spent === 60n, { timeoutMs: 5000, what: 'the calls written after the failures' });
  expect(failuresLeft).toBeLessThan(0);
  expect(sent.flat().filter((id) => id === done[0]!.id).length).toBeGreaterThan(1);
  await b.close();
  const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = $1 AND kind = 'capture'`, [a.accountId]);
  expect(n).toBe(3);
  expect(await money(a.accountId)).toEqual({ available: 940n, held: 0n, spent: 60n });
});

it('a lease replaced while a call runs on it is closed as soon as that call is written (no flush, no close)', async () => {
  const a = await account(1000n);
  const b = book(30_000, 500n);
  const first = await b.reserve(a.accountId, 400n);
  // no room left on the first lease: a second one, the first retires with its call still running
  const second = await b.reserve(a.accountId, 200n);
  expect(second.lease.id).not.toBe(first.lease.id);
  b.finish(first, finished(a, 50n));
  await waitFor(async () => (await money(a.accountId)).held === 500n, { timeoutMs: 5000, what: 'the first lease closed' });
  expect(await money(a.accountId)).toEqual({ available: 450n, held: 500n, spent: 50n });
  b.finish(second, finished(a, 0n));
  await b.close();
  expect(await money(a.accountId)).toEqual({ available: 950n, held: 0n, spent: 50n });
});

describe("the edge's two lease books give each other an account's idle money before refusing (no avoidable 402)", () => {
  it('a task hold refused while a finished chat call left the balance leased goes through once the chat lease is given back', async () => {
    const a = await account(1000n);
    const chat = book(30_000, 1000n);
    const r = await chat.reserve(a.accountId, 100n);
    chat.finish(r, finished(a, 30n));
    // the call is written; its lease (the whole balance) stays open, idle, for the next call
    await waitFor(async () => (await money(a.accountId)).spent === 30n, { timeoutMs: 5000, what: 'the chat call written' });
    expect(await money(a.accountId)).toEqual({ available: 0n, held: 970n, spent: 30n });
    // an edge whose task holds do not ask the chat book: the account row refuses
    await expect(new HoldBatchingTaskRepository(db.dataSource).createWithHold(testTask(a, 500n))).rejects.toMatchObject({ code: 'payment_required' });
    const task = await new HoldBatchingTaskRepository(db.dataSource, { idle: chat }).createWithHold(testTask(a, 500n));
    expect(task.price).toBe(500n);
    expect(await money(a.accountId)).toEqual({ available: 470n, held: 500n, spent: 30n });
    // and the account's real shortage is still a 402
    await expect(new HoldBatchingTaskRepository(db.dataSource, { idle: chat }).createWithHold(testTask(a, 471n))).rejects.toMatchObject({
      code: 'payment_required',
    });
    await chat.close();
  });

  it('a chat call refused while a task-hold lease keeps the rest of the balance goes through once that lease is given back', async () => {
    const a = await account(1000n);
    const taskLeases = new TaskLeaseBook(leases, { targetMinor: 1000n, ttlMs: 30_000, idleCloseMs: 60_000 });
    const tasks = new HoldBatchingTaskRepository(db.dataSource, { leases: taskLeases, leaseWhen: 'always' });
    await tasks.createWithHold(testTask(a, 100n));
    // the task's lease holds the whole balance: 100 spent on the task, 900 idle in the lease
    expect(await money(a.accountId)).toEqual({ available: 0n, held: 1000n, spent: 0n });
    const alone = book(30_000, 300n);
    await expect(alone.reserve(a.accountId, 200n)).rejects.toMatchObject({ code: 'payment_required' });
    const chat = new CreditLeaseBook({ leases, calls, logger, targetMinor: 300n, ttlMs: 30_000, idle: taskLeases });
    const r = await chat.reserve(a.accountId, 200n);
    expect(r.amount).toBe(200n);
    expect(await money(a.accountId)).toEqual({ available: 600n, held: 400n, spent: 0n });
    chat.finish(r, finished(a, 0n));
    await Promise.all([chat.close(), alone.close(), taskLeases.close()]);
    expect(await money(a.accountId)).toEqual({ available: 900n, held: 100n, spent: 0n });
  });
});

it('one statement per lease carries its open rows and records together; a call open and finished in one flush is sent once, as its record', async () => {
  const a = await account(1000n);
  const statements: Array<{ opens: string[]; records: string[] }> = [];
  const b = new CreditLeaseBook({
    leases: leasesWith({
      write: (leaseId, opened, done) => {
        statements.push({ opens: opened.map((c) => c.id), records: done.map((c) => c.id) });
        return leases.write(leaseId, opened, done);
      },
    }),
    calls,
    logger,
    targetMinor: 1000n,
    ttlMs: 30_000,
  });
  const rs = await Promise.all(Array.from({ length: 6 }, () => b.reserve(a.accountId, 100n)));
  const cs = rs.map(() => started(a));
  // six calls start in one turn; three of them (whole answers) end in that turn too
  const opened = rs.map((r, i) => b.open(r, cs[i]!, () => 0n));
  for (const i of [0, 1, 2]) b.finish(rs[i]!, { ...finished(a, 10n), id: cs[i]!.id });
  await Promise.all(opened.map((o) => o.durable));
  // the rest end once their rows are written (streams)
  for (const i of [3, 4, 5]) b.finish(rs[i]!, { ...finished(a, 10n), id: cs[i]!.id });
  await b.flush();
  const ids = cs.map((c) => c.id);
  expect(statements).toEqual([
    // the first call's row alone (nothing in flight), then one statement for everything that came meanwhile: the
    // open rows of 3..5, the records of 0..2 — the rows of 1 and 2 are written by their records, not sent twice
    { opens: [ids[0]], records: [] },
    { opens: ids.slice(3), records: ids.slice(0, 3) },
    { opens: [], records: [ids[3]] },
    { opens: [], records: ids.slice(4) },
  ]);
  // the two batchers sent 2 open statements (0 alone, 1..5) + 4 record statements (0 alone, 1..2, 3 alone, 4..5)
  expect(statements.length).toBeLessThan(6);
  const rows = await db.dataSource.query(`SELECT id, status FROM tasks WHERE id = ANY($1)`, [ids]);
  expect(rows).toHaveLength(6);
  expect(rows.every((r: { status: string }) => r.status === 'completed')).toBe(true);
  const caps = await db.dataSource.query(`SELECT task_id FROM ledger_entries WHERE task_id = ANY($1) AND kind = 'capture'`, [ids]);
  expect(caps).toHaveLength(6);
  await b.close();
  expect(await money(a.accountId)).toEqual({ available: 940n, held: 0n, spent: 60n });
});

it('a failed statement carrying open rows and records refuses the open rows and keeps the records, written once by the retry', async () => {
  const a = await account(1000n);
  let failuresLeft = 1;
  const b = new CreditLeaseBook({
    leases: leasesWith({
      write: (leaseId, opened, done) => {
        if (done.length > 0 && failuresLeft-- > 0) return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432'));
        return leases.write(leaseId, opened, done);
      },
    }),
    calls,
    logger,
    targetMinor: 1000n,
    ttlMs: 30_000,
  });
  const [r0, r1, r2] = await Promise.all([0, 1, 2].map(() => b.reserve(a.accountId, 100n)));
  const [c0, c1, c2] = [0, 1, 2].map(() => started(a));
  // 0 is written alone; 1 and 2 start meanwhile and 1 ends at once: its record and 2's row share the failing statement
  const o0 = b.open(r0!, c0!, () => 0n);
  const o1 = b.open(r1!, c1!, () => 0n);
  const o2 = b.open(r2!, c2!, () => 0n);
  b.finish(r1!, { ...finished(a, 25n), id: c1!.id });
  await o0.durable;
  await expect(o1.durable).rejects.toThrow(/ECONNREFUSED/);
  await expect(o2.durable).rejects.toThrow(/ECONNREFUSED/);
  expect(o2.failure).toBeInstanceOf(Error);
  // the record is retried by the book itself (a timer): call 1 is charged once
  await waitFor(async () => (await money(a.accountId)).spent === 25n, { timeoutMs: 5000, what: 'the kept record written' });
  b.finish(r0!, { ...finished(a, 5n), id: c0!.id });
  b.finish(r2!, { ...finished(a, 0n), id: c2!.id });
  await b.close();
  const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = $1 AND kind = 'capture'`, [a.accountId]);
  expect(n).toBe(3);
  expect(await money(a.accountId)).toEqual({ available: 970n, held: 0n, spent: 30n });
});
