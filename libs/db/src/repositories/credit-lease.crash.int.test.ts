import { createTestDatabase, type TestDatabase } from '@gmg/testing';
import { newTaskId } from '../ids';
import { AccountRepository } from './account.repository';
import { ApiKeyRepository } from './api-key.repository';
import { CreditLeaseRepository, type LeasedCall, type OpenedCall } from './credit-lease.repository';
import type { Row } from './sql';

/**
 * An edge dies mid-call (docs/messages.md, "Crash"): its calls were written `processing` on its lease before their
 * first byte and journalled their cost so far. Closing the lease charges each open call exactly once what it
 * journalled (never above its reservation) and returns the rest; a late batch from the edge charges nothing again.
 */
let db: TestDatabase;
let leases: CreditLeaseRepository;
beforeAll(async () => {
  db = await createTestDatabase();
  leases = new CreditLeaseRepository(db.dataSource);
});
afterAll(async () => {
  await db?.drop();
});

/** The edge's statements: its one statement per lease (`gmg_write_chat_calls`) with open rows only, or records only. */
const openCalls = async (leaseId: string, calls: OpenedCall[]) => (await leases.write(leaseId, calls, [])).active;
const record = async (leaseId: string, calls: LeasedCall[]) => (await leases.write(leaseId, [], calls)).active;
const money = async (accountId: string) => {
  const [a]: Row[] = await db.dataSource.query(`SELECT available::text, held::text, spent::text FROM accounts WHERE id = $1`, [accountId]);
  return { available: BigInt(a.available as string), held: BigInt(a.held as string), spent: BigInt(a.spent as string) };
};
const ledger = async (taskId: string): Promise<Row[]> =>
  db.dataSource.query(`SELECT kind, amount::text AS amount FROM ledger_entries WHERE task_id = $1 ORDER BY id`, [taskId]);

it("closing a dead edge's lease charges each open call its journalled cost once; a late batch charges nothing again", async () => {
  const accounts = new AccountRepository(db.dataSource);
  const account = await accounts.create({ name: 'crash' });
  await accounts.topup(account.id, 10_000n, {});
  const { key } = await new ApiKeyRepository(db.dataSource).create({ accountId: account.id, name: 'k', models: null });
  const leaseId = `lease_${newTaskId().slice(5)}`;
  expect(await leases.grant({ id: leaseId, accountId: account.id, edgeId: 'edge-a', min: 1000n, want: 5000n, ttlMs: 60_000 })).not.toBeNull();

  const opened = (reserved: bigint): OpenedCall => ({
    id: newTaskId(),
    accountId: account.id,
    apiKeyId: key.id,
    model: 'lumen-chat-1',
    requestedModel: 'lumen-chat-1',
    reserved,
    request: {},
    priceSnapshot: {},
    startedAt: new Date(),
  });
  const [a, b, c, done] = [opened(1000n), opened(1000n), opened(500n), opened(800n)];
  expect(await openCalls(leaseId, [a, b, c, done])).toBe(true);
  // journalled: a streamed 120, b 9999 (above its reservation: clamped), c nothing yet
  await leases.journal([
    { id: a.id, costSoFar: 120n },
    { id: b.id, costSoFar: 9999n },
  ]);
  // `done` ended before the crash and its batch was written: captured once, by the batch
  const final: LeasedCall = { ...done, status: 'completed', cost: 300n, result: { cost: '300' }, error: null, channelId: null };
  expect(await record(leaseId, [final])).toBe(true);

  const rest = await leases.close(leaseId);
  expect(rest).toBe(5000n - 300n - 120n - 1000n - 0n);
  expect((await ledger(a.id)).map((r) => [r.kind, r.amount])).toEqual([['capture', '120']]);
  expect((await ledger(b.id)).map((r) => [r.kind, r.amount])).toEqual([['capture', '1000']]);
  expect((await ledger(c.id)).map((r) => [r.kind, r.amount])).toEqual([['capture', '0']]);
  expect((await ledger(done.id)).map((r) => [r.kind, r.amount])).toEqual([['capture', '300']]);
  const rows: Row[] = await db.dataSource.query(`SELECT id, status, result->>'charge_rule' AS rule FROM tasks WHERE id = ANY($1) ORDER BY id`, [
    [a.id, b.id, c.id],
  ]);
  expect(rows.map((r) => [r.status, r.rule])).toEqual([
    ['failed', 'edge_lost'],
    ['failed', 'edge_lost'],
    ['failed', 'edge_lost'],
  ]);

  // the edge was only cut off and comes back with its batch: the lease is closed, nothing is charged twice
  const late = [a, b].map((x): LeasedCall => ({ ...x, status: 'completed', cost: 700n, result: null, error: null, channelId: null }));
  expect(await record(leaseId, late)).toBe(false);
  expect(await leases.close(leaseId)).toBeNull();
  expect((await ledger(a.id)).length).toBe(1);

  // the lease: hold = Σ captures + release; the account: available + held + spent = topups, nothing held
  const [hold, release] = await ledger(leaseId);
  expect(BigInt(hold.amount as string)).toBe(120n + 1000n + 0n + 300n + BigInt(release.amount as string));
  expect(await money(account.id)).toEqual({ available: 10_000n - 1420n, held: 0n, spent: 1420n });
});

it('the first byte does not wait for the open row: a record that lands before it is captured once and the late row changes nothing; a call without a row when its edge dies costs nothing', async () => {
  const accounts = new AccountRepository(db.dataSource);
  const account = await accounts.create({ name: 'crash-open-row' });
  await accounts.topup(account.id, 10_000n, {});
  const { key } = await new ApiKeyRepository(db.dataSource).create({ accountId: account.id, name: 'k', models: null });
  const leaseId = `lease_${newTaskId().slice(5)}`;
  expect(await leases.grant({ id: leaseId, accountId: account.id, edgeId: 'edge-b', min: 1000n, want: 5000n, ttlMs: 60_000 })).not.toBeNull();
  const opened = (reserved: bigint): OpenedCall => ({
    id: newTaskId(),
    accountId: account.id,
    apiKeyId: key.id,
    model: 'lumen-chat-1',
    requestedModel: 'lumen-chat-1',
    reserved,
    request: {},
    priceSnapshot: {},
    startedAt: new Date(),
  });
  // `whole`: a whole answer sent while its open row was still being written; its record (which writes a missing
  // row) is answered first, then the open row's statement arrives: it must neither reopen nor charge the call
  const [whole, unopened] = [opened(1000n), opened(1000n)];
  expect(await record(leaseId, [{ ...whole, status: 'completed', cost: 400n, result: { cost: '400' }, error: null, channelId: null }])).toBe(true);
  expect(await leases.write(leaseId, [whole], [])).toEqual({ active: true, written: 0 });
  const [row]: Row[] = await db.dataSource.query(`SELECT status FROM tasks WHERE id = $1`, [whole.id]);
  expect(row.status).toBe('completed');

  // `unopened`: the edge died while its open row was in flight (a kill -9 within the open statement); no row
  // reached Postgres. The lease's close charges it nothing (as a written row that had journalled nothing) and
  // returns its reservation with the rest
  expect(await leases.close(leaseId)).toBe(5000n - 400n);
  expect((await ledger(whole.id)).map((r) => [r.kind, r.amount])).toEqual([['capture', '400']]);
  expect(await ledger(unopened.id)).toEqual([]);
  // a late open row (the edge was only cut off) finds the lease closed: nothing written, nothing charged
  expect(await openCalls(leaseId, [unopened])).toBe(false);
  expect(await db.dataSource.query(`SELECT id FROM tasks WHERE id = $1`, [unopened.id])).toEqual([]);
  const [hold, release] = await ledger(leaseId);
  expect(BigInt(hold.amount as string)).toBe(400n + BigInt(release.amount as string));
  expect(await money(account.id)).toEqual({ available: 10_000n - 400n, held: 0n, spent: 400n });
});
