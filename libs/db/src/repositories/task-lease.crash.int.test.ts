import type { DataSource } from 'typeorm';
import { createTestDatabase, testTask, waitFor, type TestDatabase } from '@gmg/testing';
import { AccountRepository } from './account.repository';
import { ApiKeyRepository } from './api-key.repository';
import { CreditLeaseRepository } from './credit-lease.repository';
import { HoldBatchingTaskRepository } from './hold-batcher';
import { assertLedger } from './ledger-model.test-kit';
import { settleMany } from './ledger.repository';
import type { Row } from './sql';
import { TaskLeaseBook } from './task-lease.book';
import { HOLD_LEASED_SQL, TaskRepository, holdTasks } from './task.repository';

/**
 * Crash safety of lease-paid task holds (docs/reliability.md, "Hot accounts"): an edge that dies holding a lease
 * strands no money, a lease a sweeper closed pays for nothing afterwards, and a task whose journal answer was lost
 * is held exactly once. Each guarantee is checked with its safeguard removed too (the `mutant` cases): the same
 * scenario must then fail, or the test proves nothing.
 */

/** What any edge's sweeper does (ChatCallSweeper): close every lease past its expiry. `close` is injectable for the mutants. */
async function sweep(ds: DataSource, close: (id: string) => Promise<unknown> = (id) => new CreditLeaseRepository(ds).close(id)): Promise<void> {
  for (const id of await new CreditLeaseRepository(ds).findExpired()) await close(id);
}

/** A close that marks the lease closed and releases nothing: the lease's rest stays held forever. */
const closeWithoutRelease =
  (ds: DataSource) =>
  (id: string): Promise<unknown> =>
    ds.query(`UPDATE credit_leases SET status = 'closed', closed_at = now() WHERE id = $1 AND status = 'active'`, [id]);

/** The journal without its `status = 'active'` gate: a task can be paid from a lease after its release. */
const UNGATED_JOURNAL_SQL = ((): string => {
  const gates = [`AND status = 'active' ORDER BY id FOR UPDATE`, `AND l.status = 'active'`];
  if (!gates.every((g) => HOLD_LEASED_SQL.includes(g))) throw new Error('the mutant no longer matches HOLD_LEASED_SQL: update it');
  return HOLD_LEASED_SQL.replace(gates[0]!, 'ORDER BY id FOR UPDATE').replace(gates[1]!, '');
})();

/** The account's money is all accounted for (checkLedger: balance, nothing stranded, leases exact); its balance. */
async function checkAccount(ds: DataSource, accountId: string): Promise<{ available: bigint; held: bigint }> {
  await assertLedger(ds, accountId);
  const [a]: Row[] = await ds.query(`SELECT available::text, held::text FROM accounts WHERE id = $1`, [accountId]);
  return { available: BigInt(a.available as string), held: BigInt(a.held as string) };
}

describe('lease-paid task holds survive a crashed edge (real Postgres)', () => {
  let db: TestDatabase;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = db.dataSource;
  });
  afterAll(async () => {
    await db?.drop();
  });

  async function owner(topup: bigint): Promise<{ accountId: string; apiKeyId: string }> {
    const account = await new AccountRepository(ds).create({ name: 'lease-crash' });
    await new AccountRepository(ds).topup(account.id, topup);
    const { key } = await new ApiKeyRepository(ds).create({ accountId: account.id });
    return { accountId: account.id, apiKeyId: key.id };
  }

  /**
   * An edge holds five tasks from a lease of 1,000 and dies (stops renewing); the lease expires and a sweeper closes
   * it. Then the tasks finish and settle. Returns the account after the sweep and at the end.
   */
  async function deadEdge(close?: (id: string) => Promise<unknown>): Promise<{ swept: bigint; end: bigint }> {
    const o = await owner(5_000n);
    const book = new TaskLeaseBook(new CreditLeaseRepository(ds), { targetMinor: 1_000n, ttlMs: 600, idleCloseMs: 60_000 });
    const edge = new HoldBatchingTaskRepository(ds, { leases: book, leaseWhen: 'always' });
    const tasks = await Promise.all([10n, 20n, 30n, 40n, 50n].map((p) => edge.createWithHold(testTask(o, p))));
    book.abandon(); // the process dies: nothing closes its lease, nothing renews it
    await waitFor(async () => (await new CreditLeaseRepository(ds).findExpired()).length > 0, { timeoutMs: 10_000 });
    await sweep(ds, close);
    const swept = await checkAccount(ds, o.accountId);
    // the tasks accepted under the dead edge's lease are real: they finish and settle like any other
    const repo = new TaskRepository(ds);
    for (const t of tasks) await repo.fail(t.id, { code: 'task_failed', message: 'crash test' });
    await settleMany(
      ds,
      tasks.map((t) => t.id),
    );
    const end = await checkAccount(ds, o.accountId);
    expect(end.held).toBe(0n);
    return { swept: swept.available, end: end.available };
  }

  it('an edge that dies holding a lease strands no money: the sweeper returns its rest, its tasks settle once', async () => {
    const { swept, end } = await deadEdge();
    expect(swept).toBe(5_000n - 150n); // only the five tasks stay held
    expect(end).toBe(5_000n);
  }, 30_000);

  it("mutant: a sweeper that closes without releasing strands the lease's rest (the check catches it)", async () => {
    await expect(deadEdge(closeWithoutRelease(ds))).rejects.toThrow(/stranded|lease release/);
  }, 30_000);

  it("a lease closed by a sweeper pays for nothing afterwards: the late edge's task is held directly, once", async () => {
    const o = await owner(1_000n);
    const leases = new CreditLeaseRepository(ds);
    const g = await leases.grant({ id: 'lease_zombie_ok', accountId: o.accountId, edgeId: 'edge_zombie', min: 1n, want: 400n, ttlMs: 60_000 });
    expect(g?.amount).toBe(400n);
    expect(await leases.close('lease_zombie_ok')).toBe(400n); // its edge was cut off; a sweeper closed it
    const late = testTask(o, 70n);
    expect((await holdTasks(ds, [{ task: late, leaseId: 'lease_zombie_ok' }], HOLD_LEASED_SQL)).tasks.size).toBe(0);
    await checkAccount(ds, o.accountId);

    // through the repository: a book whose lease was closed under it falls back to the account row
    const book = new TaskLeaseBook(leases, { targetMinor: 300n, ttlMs: 60_000, idleCloseMs: 60_000 });
    const edge = new HoldBatchingTaskRepository(ds, { leases: book, leaseWhen: 'always' });
    await edge.createWithHold(testTask(o, 10n));
    const [{ id }]: Row[] = await ds.query(`SELECT id FROM credit_leases WHERE account_id = $1 AND status = 'active'`, [o.accountId]);
    await leases.close(id as string);
    const after = await edge.createWithHold(testTask(o, 20n));
    const [hold]: Row[] = await ds.query(`SELECT count(*)::int AS n, min(meta->>'lease') AS lease FROM ledger_entries WHERE task_id = $1 AND kind = 'hold'`, [
      after.id,
    ]);
    expect(hold).toEqual({ n: 1, lease: null }); // held on the account row, not on the closed lease
    await book.close();
    expect((await checkAccount(ds, o.accountId)).held).toBe(30n);
  }, 30_000);

  it('mutant: a journal without the active-lease gate pays a task from a released lease (the check catches it)', async () => {
    const o = await owner(1_000n);
    const leases = new CreditLeaseRepository(ds);
    await leases.grant({ id: 'lease_zombie_mut', accountId: o.accountId, edgeId: 'edge_zombie', min: 1n, want: 400n, ttlMs: 60_000 });
    await leases.close('lease_zombie_mut');
    expect((await holdTasks(ds, [{ task: testTask(o, 70n), leaseId: 'lease_zombie_mut' }], UNGATED_JOURNAL_SQL)).tasks.size).toBe(1);
    await expect(checkAccount(ds, o.accountId)).rejects.toThrow(/stranded|lease used|lease release/);
  }, 30_000);

  it('a grant racing a hold, a close and a topup of the same account grants what is there, never an error or an overdraft', async () => {
    const failures: string[] = [];
    for (let i = 0; i < 20; i++) {
      const o = await owner(600n);
      const leases = new CreditLeaseRepository(ds);
      await leases.grant({ id: `lease_race_${i}_old`, accountId: o.accountId, edgeId: 'e', min: 0n, want: 300n, ttlMs: 60_000 });
      const racing = await Promise.allSettled([
        leases.grant({ id: `lease_race_${i}_new`, accountId: o.accountId, edgeId: 'e', min: 0n, want: 500n, ttlMs: 60_000 }),
        leases.close(`lease_race_${i}_old`),
        new TaskRepository(ds).createWithHold(testTask(o, 200n)),
        new AccountRepository(ds).topup(o.accountId, 5n),
      ]);
      for (const r of racing) if (r.status === 'rejected' && (r.reason as { type?: string }).type !== 'payment_required') failures.push(String(r.reason));
      await checkAccount(ds, o.accountId);
    }
    expect(failures).toEqual([]);
  }, 60_000);

  it('a task whose journal answer was lost after the commit is answered from the database and held exactly once', async () => {
    const o = await owner(1_000n);
    let cut = true;
    // the connection drops after the journal statement committed: its caller sees an error, not the rows
    const lossy: Pick<DataSource, 'query'> = {
      query: (async (sql: string, params?: unknown[]) => {
        const out: unknown = await ds.query(sql, params);
        if (cut && sql === HOLD_LEASED_SQL) {
          cut = false;
          throw new Error('Connection terminated unexpectedly');
        }
        return out;
      }) as DataSource['query'],
    };
    const book = new TaskLeaseBook(new CreditLeaseRepository(ds), { targetMinor: 500n, ttlMs: 60_000, idleCloseMs: 60_000 });
    const edge = new HoldBatchingTaskRepository(lossy, { leases: book, leaseWhen: 'always' });
    const task = testTask(o, 60n);
    const rec = await edge.createWithHold(task);
    expect(cut).toBe(false);
    expect(rec.id).toBe(task.id);
    const [e]: Row[] = await ds.query(`SELECT count(*)::int AS n, sum(amount)::text AS total FROM ledger_entries WHERE task_id = $1 AND kind = 'hold'`, [
      task.id,
    ]);
    expect(e).toEqual({ n: 1, total: '60' });
    await book.close();
    expect(await checkAccount(ds, o.accountId)).toEqual({ available: 940n, held: 60n });
  }, 30_000);
});
