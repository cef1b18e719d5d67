import { createTestDatabase, fundedOwner, testChatCall, type TestDatabase } from '@gmg/testing';
import { newTaskId } from '../ids';
import { CreditLeaseRepository, openedRow, recordedRow, type LeasedCall } from './credit-lease.repository';
import type { Row } from './sql';

/**
 * The chat call's statements are functions (migrations 1765760000000-chat-call-functions, 1766000000000-chat-call-write):
 * an open row commits asynchronously, for its own transaction only (docs/messages.md, "What a crash costs": no money
 * moves asynchronously), and a record — which moves money — synchronously. The edge's one statement per lease
 * (`gmg_write_chat_calls`) is asynchronous only while it carries no record.
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

/** `synchronous_commit` inside a transaction that ran `statement`, and on the same connection after it. */
async function commitModeOf(statement: string, params: unknown[] = []): Promise<{ inside: string; after: string }> {
  const qr = db.dataSource.createQueryRunner();
  await qr.connect();
  try {
    const mode = async () => ((await qr.query('SHOW synchronous_commit')) as Array<{ synchronous_commit: string }>)[0].synchronous_commit;
    await qr.query('BEGIN');
    await qr.query(statement, params);
    const inside = await mode();
    await qr.query('COMMIT');
    return { inside, after: await mode() };
  } finally {
    await qr.release();
  }
}

/** A funded account with an active lease on it. */
async function leased() {
  const owner = await fundedOwner(db.dataSource, 'commit-mode', 10_000n);
  const leaseId = `lease_${newTaskId().slice(5)}`;
  expect(await leases.grant({ id: leaseId, accountId: owner.accountId, edgeId: 'edge-a', min: 1000n, want: 5000n, ttlMs: 60_000 })).not.toBeNull();
  return { owner, leaseId };
}

it('the open-row function commits its own transaction asynchronously; the record function synchronously', async () => {
  expect(await commitModeOf(`SELECT * FROM gmg_open_chat_calls('lease_none', '[]'::jsonb)`)).toEqual({ inside: 'off', after: 'on' });
  expect(await commitModeOf(`SELECT * FROM gmg_record_chat_calls('lease_none', '[]'::jsonb)`)).toEqual({ inside: 'on', after: 'on' });
});

it('the one statement per lease commits asynchronously with open rows only, synchronously as soon as it carries a record', async () => {
  const { owner, leaseId } = await leased();
  const call = (): LeasedCall => ({ ...testChatCall(owner, 40n), reserved: 100n });
  const write = `SELECT * FROM gmg_write_chat_calls($1, $2::jsonb, $3::jsonb)`;
  // a call's columns as the repository sends them
  const json = (cs: LeasedCall[], open: boolean) => JSON.stringify(cs.map(open ? openedRow : recordedRow));
  const [a, b, c] = [call(), call(), call()];
  // open rows only: no money moves
  expect(await commitModeOf(write, [leaseId, json([a], true), '[]'])).toEqual({ inside: 'off', after: 'on' });
  // a record only, and a record with open rows: money moves, the WAL is flushed before the commit answers
  expect(await commitModeOf(write, [leaseId, '[]', json([a], false)])).toEqual({ inside: 'on', after: 'on' });
  expect(await commitModeOf(write, [leaseId, json([b], true), json([c], false)])).toEqual({ inside: 'on', after: 'on' });
  // with nothing written (no such lease) the mode follows what it carries, too
  expect(await commitModeOf(`SELECT * FROM gmg_write_chat_calls('lease_none', '[]'::jsonb, $1::jsonb)`, [json([call()], false)])).toEqual({
    inside: 'on',
    after: 'on',
  });
  const [{ spent }]: Row[] = await db.dataSource.query(`SELECT spent::text FROM accounts WHERE id = $1`, [owner.accountId]);
  expect(spent).toBe('80');
});

it('a call in both the open rows and the records of one statement is written once and captured once; a lease not active writes nothing', async () => {
  const { owner, leaseId } = await leased();
  const both: LeasedCall = { ...testChatCall(owner, 30n), reserved: 100n };
  const other: LeasedCall = { ...testChatCall(owner, 0n), reserved: 100n };
  const [opened, done] = [[both, other].map((c) => ({ ...c })), [both]];
  expect(await leases.write(leaseId, opened, done)).toEqual({ active: true, written: 2 });
  const rows: Row[] = await db.dataSource.query(`SELECT id, status, lease_id FROM tasks WHERE id = ANY($1) ORDER BY status`, [[both.id, other.id]]);
  expect(rows).toEqual([
    { id: both.id, status: 'completed', lease_id: leaseId },
    { id: other.id, status: 'processing', lease_id: leaseId },
  ]);
  const caps: Row[] = await db.dataSource.query(`SELECT amount::text FROM ledger_entries WHERE task_id = $1 AND kind = 'capture'`, [both.id]);
  expect(caps).toEqual([{ amount: '30' }]);
  // sent again (a retried statement): nothing more is written or charged
  expect(await leases.write(leaseId, [], done)).toEqual({ active: true, written: 0 });
  const [l]: Row[] = await db.dataSource.query(`SELECT used::text FROM credit_leases WHERE id = $1`, [leaseId]);
  expect(l!.used).toBe('30');
  await leases.close(leaseId);
  const late: LeasedCall = { ...testChatCall(owner, 10n), reserved: 100n };
  expect(await leases.write(leaseId, [late], [late])).toEqual({ active: false, written: 0 });
  expect(await db.dataSource.query(`SELECT id FROM tasks WHERE id = $1`, [late.id])).toEqual([]);
});
