import { createTestDatabase, testTask, type TestDatabase } from '@gmg/testing';
import type { DataSource } from 'typeorm';
import { AccountRepository } from './account.repository';
import { ApiKeyRepository, type SpendCap } from './api-key.repository';
import { CreditLeaseRepository } from './credit-lease.repository';
import { HoldBatchingTaskRepository } from './hold-batcher';
import { settle } from './ledger.repository';
import { assertLedger } from './ledger-model.test-kit';
import type { Row } from './sql';
import { TaskLeaseBook } from './task-lease.book';
import { HOLD_LEASED_SQL, HOLD_MANY_SQL, TaskRepository, holdTasks, type NewTask } from './task.repository';

/**
 * A key's spending cap in the hold statement (api_key_spend): on every hold path — the one-task statement, a batch,
 * the lease journal of two edges — the key's holds together never pass the cap, and settlement gives back what a task
 * did not capture, once.
 */
describe('API key spending cap (real Postgres)', () => {
  let db: TestDatabase;
  let scratch: TestDatabase;
  const books: TaskLeaseBook[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    scratch = await createTestDatabase('gmg_mut_keycap');
  });
  afterAll(async () => {
    await Promise.all(books.map((b) => b.close()));
    await db?.drop();
    await scratch?.drop();
  });

  const PRICE = 100n;

  async function cappedOwner(ds: DataSource, cap: SpendCap | null) {
    const account = await new AccountRepository(ds).create({ name: 'capped' });
    await new AccountRepository(ds).topup(account.id, 1_000_000n);
    const { key } = await new ApiKeyRepository(ds).create({ accountId: account.id, cap });
    return { accountId: account.id, apiKeyId: key.id, cap };
  }

  const spentOf = async (ds: DataSource, keyId: string): Promise<bigint> => {
    const [r]: Row[] = await ds.query(`SELECT COALESCE(sum(spent), 0)::text AS s FROM api_key_spend WHERE api_key_id = $1`, [keyId]);
    return BigInt(r!.s as string);
  };

  /** 200 concurrent holds of one capped key over every path: one task alone, a batching edge, two leased edges. */
  async function race(ds: DataSource, o: Awaited<ReturnType<typeof cappedOwner>>): Promise<number> {
    const direct = new TaskRepository(ds);
    const leased = [1, 2].map(() => {
      const book = new TaskLeaseBook(new CreditLeaseRepository(ds), { targetMinor: 5_000n, ttlMs: 60_000, idleCloseMs: 60_000 });
      books.push(book);
      return new HoldBatchingTaskRepository(ds, { leases: book, leaseWhen: 'always' });
    });
    const batching = new HoldBatchingTaskRepository(ds);
    const paths = [direct, batching, ...leased];
    const out = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => paths[i % paths.length]!.createWithHold(testTask(o, PRICE, { cap: o.cap }))));
    for (const r of out)
      if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'payment_required', message: expect.stringContaining('max_spend') });
    return out.filter((r) => r.status === 'fulfilled').length;
  }

  it('holds exactly the cap of 200 concurrent holds over the one-task, batch and two-edge lease paths; the ledger checks', async () => {
    const o = await cappedOwner(db.dataSource, { maxSpend: PRICE * 10n, window: null });
    expect(await race(db.dataSource, o)).toBe(10);
    expect(await spentOf(db.dataSource, o.apiKeyId)).toBe(PRICE * 10n);
    await assertLedger(db.dataSource, o.accountId);
  }, 60_000);

  it('a batch with two capped keys of one account writes nothing of it; held one by one, each key gets its own cap', async () => {
    const ds = db.dataSource;
    const o = await cappedOwner(ds, { maxSpend: PRICE * 2n, window: 'month' });
    const { key: second } = await new ApiKeyRepository(ds).create({ accountId: o.accountId, cap: { maxSpend: PRICE, window: 'day' } });
    const tasks: NewTask[] = [testTask(o, PRICE, { cap: o.cap }), testTask({ ...o, apiKeyId: second.id }, PRICE, { cap: { maxSpend: PRICE, window: 'day' } })];
    for (const sql of [HOLD_MANY_SQL])
      expect(
        (
          await holdTasks(
            ds,
            tasks.map((task) => ({ task })),
            sql,
          )
        ).tasks.size,
      ).toBe(0);
    expect(await spentOf(ds, o.apiKeyId)).toBe(0n);
    const edge = new HoldBatchingTaskRepository(ds);
    const more = [...tasks, testTask(o, PRICE, { cap: o.cap }), testTask({ ...o, apiKeyId: second.id }, PRICE, { cap: { maxSpend: PRICE, window: 'day' } })];
    const out = await Promise.allSettled(more.map((t) => edge.createWithHold(t)));
    // the first key's two fit its cap of two; of the second key's two (held alone at once) one fits its cap of one
    const held = (i: number): number => (out[i]!.status === 'fulfilled' ? 1 : 0);
    expect({ first: held(0) + held(2), second: held(1) + held(3) }).toEqual({ first: 2, second: 1 });
    expect(await spentOf(ds, o.apiKeyId)).toBe(PRICE * 2n);
    expect(await spentOf(ds, second.id)).toBe(PRICE);
    await assertLedger(ds, o.accountId);
  }, 30_000);

  it('settlement gives back what a task did not capture, once: all of a failed task, the rest of a partial capture', async () => {
    const ds = db.dataSource;
    const o = await cappedOwner(ds, { maxSpend: PRICE * 3n, window: 'day' });
    const repo = new TaskRepository(ds);
    const [failed, partial, whole] = await Promise.all([1, 2, 3].map(() => repo.createWithHold(testTask(o, PRICE, { cap: o.cap }))));
    await expect(repo.createWithHold(testTask(o, PRICE, { cap: o.cap }))).rejects.toMatchObject({ code: 'payment_required' });
    await repo.fail(failed!.id, { code: 'task_failed', message: 'boom' });
    await repo.complete(partial!.id, { images: [] }, { captureAmount: 30n });
    await repo.complete(whole!.id, { images: [] });
    for (const t of [failed!, partial!, whole!]) await settle(ds, t.id);
    for (const t of [failed!, partial!, whole!]) expect((await settle(ds, t.id)).outcome).toBe('duplicate');
    // captured: 30 + 100; given back: 100 + 70
    expect(await spentOf(ds, o.apiKeyId)).toBe(130n);
    await assertLedger(ds, o.accountId);
    // the room given back is usable again: 170 left under a cap of 300 → one more task of 100, not two
    const again = await Promise.allSettled([1, 2].map(() => repo.createWithHold(testTask(o, PRICE, { cap: o.cap }))));
    expect(again.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  }, 30_000);

  it('mutant: with the cap gate of the upsert made void the same race holds more than the cap (the race test catches it)', async () => {
    const gate = 'WHERE s.spent + EXCLUDED.spent <= EXCLUDED.cap';
    for (const sql of [HOLD_MANY_SQL, HOLD_LEASED_SQL]) expect(sql).toContain(gate);
    // EXCLUDED carries what BEFORE INSERT triggers made of the proposed row: a cap raised to the maximum there voids the
    // gate on every path at once (the one-task statement included), and nothing else stops the key
    await scratch.dataSource.query(`CREATE FUNCTION gate_off() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN NEW.cap := 9223372036854775807; RETURN NEW; END $$`);
    await scratch.dataSource.query(`CREATE TRIGGER gate_off BEFORE INSERT ON api_key_spend FOR EACH ROW EXECUTE FUNCTION gate_off()`);
    const o = await cappedOwner(scratch.dataSource, { maxSpend: PRICE * 10n, window: null });
    expect(await race(scratch.dataSource, o)).toBeGreaterThan(10);
  }, 60_000);
});
