import { createTestDatabase, testTask, type TestDatabase } from '@gmg/testing';
import type { TaskError } from '@gmg/contracts';
import { AccountRepository } from './account.repository';
import { ApiKeyRepository } from './api-key.repository';
import { settleTask } from './ledger.repository';
import { TaskRepository } from './task.repository';
import type { Row } from './sql';

const CANCELLED: TaskError = { code: 'task_failed', message: 'Task cancelled', type: 'cancelled' };
const N = 50;

describe('cancel racing a completing poll', () => {
  let db: TestDatabase;
  let tasks: TaskRepository;
  let accounts: AccountRepository;

  beforeAll(async () => {
    db = await createTestDatabase();
    tasks = new TaskRepository(db.dataSource);
    accounts = new AccountRepository(db.dataSource);
  });
  afterAll(async () => {
    await db?.drop();
  });

  const customer = async (balance: bigint) => {
    const accountId = (await accounts.create({ name: 'race' })).id;
    const apiKeyId = (await new ApiKeyRepository(db.dataSource).create({ accountId })).key.id;
    await accounts.topup(accountId, balance);
    return { accountId, apiKeyId };
  };

  it(`settles each of ${N} tasks exactly once: cancelled ones hold + release, completed ones hold + capture`, async () => {
    const c = await customer(1_000_000n);
    // Prices differ per task, so a release or capture booked on the wrong task would show in the sums.
    const created = await Promise.all(Array.from({ length: N }, (_, i) => tasks.createWithHold(testTask(c, BigInt(100 + i)))));
    // For every task, the owner's cancel and the worker's completion (each followed by its settlement, as the cancel
    // route and the billing queue do) start together; the order of starts alternates so either side gets a head start.
    const runs = created.flatMap((t, i) => {
      const cancel = async () => {
        const out = await tasks.cancel(t.id, c.accountId, CANCELLED);
        if (out.outcome === 'cancelled') await settleTask(db.dataSource, t.id);
        return out.outcome;
      };
      const complete = async () => {
        const won = await tasks.complete(t.id, { images: [{ url: `http://sim/${t.id}.png` }] });
        if (won) await settleTask(db.dataSource, t.id);
        return won ? 'completed' : 'lost';
      };
      return i % 2 === 0 ? [cancel(), complete()] : [complete(), cancel()];
    });
    const outcomes = await Promise.all(runs);
    expect(outcomes).toHaveLength(2 * N);

    const byTask = new Map<string, { status: string; errorType?: string; price: bigint; kinds: string[]; amounts: Record<string, bigint> }>();
    for (const t of created) {
      const row = (await tasks.get(t.id))!;
      byTask.set(t.id, { status: row.status, errorType: row.error?.type, price: row.price, kinds: [], amounts: {} });
    }
    const entries: Row[] = await db.dataSource.query(
      `SELECT task_id, kind, amount FROM ledger_entries WHERE account_id = $1 AND task_id IS NOT NULL ORDER BY id`,
      [c.accountId],
    );
    for (const e of entries) {
      const t = byTask.get(e.task_id as string)!;
      t.kinds.push(e.kind as string);
      t.amounts[e.kind as string] = BigInt(e.amount as string);
    }

    let cancelled = 0;
    let completed = 0;
    let spent = 0n;
    for (const [, t] of byTask) {
      if (t.status === 'failed') {
        cancelled++;
        expect(t.errorType).toBe('cancelled');
        expect(t.kinds.sort()).toEqual(['hold', 'release']);
        expect(t.amounts.release).toBe(t.price);
      } else {
        completed++;
        expect(t.status).toBe('completed');
        expect(t.kinds.sort()).toEqual(['capture', 'hold']);
        expect(t.amounts.capture).toBe(t.price);
        spent += t.price;
      }
    }
    expect(cancelled + completed).toBe(N);
    // Exactly one side won each task: the outcomes agree with the rows.
    expect(outcomes.filter((o) => o === 'cancelled')).toHaveLength(cancelled);
    expect(outcomes.filter((o) => o === 'completed')).toHaveLength(completed);
    expect(outcomes.filter((o) => o === 'terminal').length + outcomes.filter((o) => o === 'lost').length).toBe(N);
    const a = (await accounts.get(c.accountId))!;
    expect({ available: a.available, held: a.held, spent: a.spent }).toEqual({ available: 1_000_000n - spent, held: 0n, spent });
    console.log(`cancel race: ${N} tasks, ${cancelled} cancelled (hold + release), ${completed} completed (hold + capture), spent ${spent}`);
  }, 60_000);

  it('answers not_found for another account and terminal for an ended task, changing nothing', async () => {
    const owner = await customer(1000n);
    const stranger = await customer(1000n);
    const t = await tasks.createWithHold(testTask(owner, 300n));
    expect(await tasks.cancel(t.id, stranger.accountId, CANCELLED)).toEqual({ outcome: 'not_found' });
    expect(await tasks.cancel('task_missing', owner.accountId, CANCELLED)).toEqual({ outcome: 'not_found' });
    expect((await tasks.get(t.id))!.status).toBe('pending');
    await tasks.complete(t.id, { images: [{ url: 'http://sim/x.png' }] });
    const out = await tasks.cancel(t.id, owner.accountId, CANCELLED);
    expect(out.outcome).toBe('terminal');
    expect(out.outcome === 'terminal' && out.task.status).toBe('completed');
  });
});
