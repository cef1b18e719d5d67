import fc from 'fast-check';
import { createTestDatabase, testTask, type TestDatabase } from '@gmg/testing';
import { AccountRepository } from './account.repository';
import { ApiKeyRepository } from './api-key.repository';
import { CreditLeaseRepository } from './credit-lease.repository';
import { HoldBatchingTaskRepository } from './hold-batcher';
import { InvariantViolation, assertLedger, ledgerProperty, realOps } from './ledger-model.test-kit';
import type { Row } from './sql';
import { TaskLeaseBook } from './task-lease.book';
import { TaskRepository, type TaskRecord } from './task.repository';

/**
 * The in-flight limit from the `task_inflight` counter (migration TaskInflightCounter1765069200000): the hold
 * statements read the key's counter rows, never its open task rows; the triggers on `tasks` keep the counter equal
 * to the open tasks (checked after every step of the ledger property, ledger-model.test-kit.ts).
 */
describe('in-flight counter (real Postgres)', () => {
  let db: TestDatabase;
  let scratch: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
    scratch = await createTestDatabase('gmg_mut_inflight');
  });
  afterAll(async () => {
    await db?.drop();
    await scratch?.drop();
  });

  it('limits a key by its counter on every hold path (one task, leased by two edges) and frees a slot at the terminal transition', async () => {
    const ds = db.dataSource;
    const account = await new AccountRepository(ds).create({ name: 'inflight' });
    await new AccountRepository(ds).topup(account.id, 10_000n);
    const { key } = await new ApiKeyRepository(ds).create({ accountId: account.id });
    const o = { accountId: account.id, apiKeyId: key.id };
    const limited = { inflightLimit: 3 };
    const direct = new TaskRepository(ds);
    const books = [1, 2].map(() => new TaskLeaseBook(new CreditLeaseRepository(ds), { targetMinor: 1_000n, ttlMs: 60_000, idleCloseMs: 60_000 }));
    const edges = books.map((leases) => new HoldBatchingTaskRepository(ds, { leases, leaseWhen: 'always' }));
    const held: TaskRecord[] = [];
    held.push(await direct.createWithHold(testTask(o, 10n, limited)));
    held.push(await edges[0]!.createWithHold(testTask(o, 10n, limited)));
    held.push(await edges[1]!.createWithHold(testTask(o, 10n, limited)));
    for (const repo of [direct, ...edges]) {
      await expect(repo.createWithHold(testTask(o, 10n, limited))).rejects.toMatchObject({ type: 'rate_limit_error' });
    }
    const [c]: Row[] = await ds.query(`SELECT sum(open)::int AS open FROM task_inflight WHERE api_key_id = $1`, [key.id]);
    expect(c.open).toBe(3);
    await direct.complete(held[0]!.id, { images: [] });
    held.push(await edges[1]!.createWithHold(testTask(o, 10n, limited)));
    await assertLedger(ds, account.id);
    // the count is the counter's: a key whose counter says it is full is refused though it has no open rows
    const { key: other } = await new ApiKeyRepository(ds).create({ accountId: account.id });
    await ds.query(`INSERT INTO task_inflight (api_key_id, shard, open) VALUES ($1, 0, 3)`, [other.id]);
    await expect(direct.createWithHold(testTask({ ...o, apiKeyId: other.id }, 10n, limited))).rejects.toMatchObject({ type: 'rate_limit_error' });
    await Promise.all(books.map((b) => b.close()));
  }, 30_000);

  it('mutant: without the trigger that uncounts a finished task the counter drifts (the property catches it)', async () => {
    await scratch.dataSource.query(`DROP TRIGGER tasks_inflight_close ON tasks`);
    const out = await fc.check(ledgerProperty(scratch.dataSource, realOps), { numRuns: 300 });
    expect(out.failed).toBe(true);
    expect(out.errorInstance).toBeInstanceOf(InvariantViolation);
    expect((out.errorInstance as InvariantViolation).invariant).toBe('in-flight counter');
  }, 120_000);
});
