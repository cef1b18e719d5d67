import { AccountRepository, ApiKeyRepository, TaskRecoveryRepository, TaskRepository, newTaskId, settleTask, type TaskRecord } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import type { BillingQueue } from '@gmg/queue';
import { createTestDatabase, type TestDatabase } from '@gmg/testing';
import { BillingSweeper } from './billing-sweeper';
import type { SettleTaskHandler } from './settle-task.handler';

const logger = createLogger({ service: 'test', level: 'silent' });
const PRICE = 100n;

let db: TestDatabase;
let tasks: TaskRepository;
let accountId: string;
let apiKeyId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  tasks = new TaskRepository(db.dataSource);
  const accounts = new AccountRepository(db.dataSource);
  accountId = (await accounts.create({ name: 'sweeper-test' })).id;
  await accounts.topup(accountId, 1_000_000n);
  apiKeyId = (await new ApiKeyRepository(db.dataSource).create({ accountId })).key.id;
});

afterAll(async () => { await db?.drop(); });

const newTask = (): Promise<TaskRecord> => tasks.createWithHold({
  id: newTaskId(), accountId, apiKeyId, model: 'lumen-2', requestedModel: 'lumen-2', pool: 'image',
  request: { model: 'lumen-2', requestedModel: 'lumen-2', pool: 'image', upstreamBody: {}, derived: {}, billing: [], expected: { kind: 'images', count: 1 } },
  price: PRICE, priceSnapshot: {}, deadlineAt: new Date(Date.now() + 60_000),
});
const unsettledIds = (olderThanMs = 0): Promise<string[]> => new TaskRecoveryRepository(db.dataSource).unsettledIds(olderThanMs, 1000);
const kinds = async (taskId: string): Promise<string[]> =>
  (await db.dataSource.query(`SELECT kind FROM ledger_entries WHERE task_id = $1 ORDER BY id`, [taskId])).map((r: { kind: string }) => r.kind);

describe('findUnsettled', () => {
  it('returns an unsettled terminal task, and not once settleTask has settled it (settled_at set)', async () => {
    const open = await newTask();
    const done = await newTask();
    await tasks.complete(done.id, {});
    expect(await unsettledIds()).toEqual([done.id]);

    expect(await settleTask(db.dataSource, done.id)).toBe('captured');
    expect((await tasks.get(done.id))?.settledAt).toBeInstanceOf(Date);
    expect(await unsettledIds()).not.toContain(done.id);
    expect(await unsettledIds()).not.toContain(open.id);
    expect(await settleTask(db.dataSource, done.id)).toBe('duplicate');
  });

  it('skips terminal tasks that ended less than olderThanMs ago', async () => {
    const t = await newTask();
    await tasks.fail(t.id, { code: 'task_failed', message: 'x' });
    expect(await unsettledIds(60_000)).not.toContain(t.id);
    expect(await unsettledIds()).toContain(t.id);
    await settleTask(db.dataSource, t.id);
    expect(await unsettledIds()).toEqual([]);
  });
});

describe('billing sweeper', () => {
  it('logs and skips a task whose settlement throws, and still settles the tasks after it', async () => {
    const poisoned = await newTask();
    await tasks.complete(poisoned.id, {});
    const healthy = await newTask();
    await tasks.complete(healthy.id, {});
    expect([...await unsettledIds()].sort()).toEqual([poisoned.id, healthy.id].sort());

    // A finished settle job holds every settle id, so the sweeper settles directly through the settler.
    const queue = { getJob: async () => ({ getState: async () => 'completed' }) } as unknown as BillingQueue;
    const settler = {
      settle: async (taskId: string) => {
        if (taskId === poisoned.id) throw new Error('settlement keeps throwing');
        return settleTask(db.dataSource, taskId);
      },
    } as unknown as SettleTaskHandler;
    const sweeper = new BillingSweeper(tasks, new TaskRecoveryRepository(db.dataSource), queue, settler, logger, 0);

    expect(await sweeper.sweep()).toEqual({ resent: 0, settledDirectly: 1, failed: 1 });
    expect(await kinds(healthy.id)).toEqual(['hold', 'capture']);
    expect(await kinds(poisoned.id)).toEqual(['hold']);
    expect(await unsettledIds()).toEqual([poisoned.id]);
  });
});
