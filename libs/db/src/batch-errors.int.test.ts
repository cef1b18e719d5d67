import { createLogger } from '@gmg/logger';
import { batchErrors } from '@gmg/observability';
import { createTestDatabase, fundedOwner, testTask, waitFor, type TestDatabase, type TestOwner } from '@gmg/testing';
import { CreditLeaseRepository } from './repositories/credit-lease.repository';
import { HoldBatchingTaskRepository } from './repositories/hold-batcher';
import { TaskLeaseBook } from './repositories/task-lease.book';

/**
 * A failed batch statement is not thrown (its items go one by one, or are left to expire) but told: a warning line
 * and gmg_batch_errors_total{batch}. Real Postgres; the batch statements are broken on purpose (`sql`, `leasedSql`,
 * a lease repository whose renew and close fail).
 */
describe('failed batch statements: a log line and a metric each', () => {
  let db: TestDatabase;
  let owner: TestOwner;
  let lines: Array<Record<string, unknown>>;
  const logger = () => createLogger({ service: 'test', destination: { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) } });
  const counted = async (batch: string) => (await batchErrors.get()).values.find((v) => v.labels.batch === batch)?.value ?? 0;
  const BROKEN = 'SELECT * FROM no_such_table';

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });
  beforeEach(async () => {
    lines = [];
    owner = await fundedOwner(db.dataSource, 'batch-errors', 10_000n);
  });

  it('a hold batch that fails is logged and counted once, and each of its tasks is still held alone', async () => {
    const before = await counted('hold');
    const repo = new HoldBatchingTaskRepository(db.dataSource, { sql: BROKEN, logger: logger() });
    const blocker = repo.createWithHold(testTask(owner, 10n)); // alone; the next three wait and go as one batch
    const made = await Promise.all([blocker, ...[1, 2, 3].map(() => repo.createWithHold(testTask(owner, 10n)))]);
    expect(made).toHaveLength(4);
    expect(await counted('hold')).toBe(before + 1);
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, batch: 'hold', tasks: 3, code: '42P01', msg: 'a hold batch failed; its tasks are held one by one' }),
    ]);
  });

  it('a leased hold batch that fails is logged and counted, and its task is held on the account row', async () => {
    const before = await counted('hold_leased');
    const leases = new TaskLeaseBook(new CreditLeaseRepository(db.dataSource), { targetMinor: 500n, ttlMs: 60_000, idleCloseMs: 60_000 });
    const repo = new HoldBatchingTaskRepository(db.dataSource, { leases, leaseWhen: 'always', leasedSql: BROKEN, logger: logger() });
    const task = await repo.createWithHold(testTask(owner, 10n));
    expect(task.price).toBe(10n);
    expect(await counted('hold_leased')).toBe(before + 1);
    expect(lines).toEqual([expect.objectContaining({ batch: 'hold_leased', tasks: 1, code: '42P01' })]);
    await leases.close();
  });

  it('a lease renewal and a lease close that fail are logged and counted', async () => {
    const [renewed, closed] = [await counted('lease_renew'), await counted('lease_close')];
    const real = new CreditLeaseRepository(db.dataSource);
    const failing = {
      grant: (g: Parameters<CreditLeaseRepository['grant']>[0]) => real.grant(g),
      renew: () => Promise.reject(new Error('renew refused')),
      close: () => Promise.reject(new Error('close refused')),
    };
    // renewed every ttl/3 = 50 ms
    const book = new TaskLeaseBook(failing, { targetMinor: 500n, ttlMs: 150, idleCloseMs: 60_000, logger: logger() });
    const lease = await book.reserve(owner.accountId, 10n);
    expect(lease).not.toBeNull();
    await waitFor(async () => (await counted('lease_renew')) > renewed, { what: 'a failed renewal counted' });
    book.done(lease!, 10n, true); // its task written: nothing holds up the close
    await book.close();
    expect(await counted('lease_close')).toBe(closed + 1);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ batch: 'lease_renew', leases: 1, err: 'renew refused' }),
        expect.objectContaining({ batch: 'lease_close', leaseId: expect.stringMatching(/^lease_/), err: 'close refused' }),
      ]),
    );
  });
});
