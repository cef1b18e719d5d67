import { AccountRepository, TaskRepository, newTaskId, type TaskRecord } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createTestDatabase, fundedOwner, testTask, type TestDatabase, type TestOwner } from '@gmg/testing';
import { SettleTaskHandler } from './settle-task.handler';

/**
 * The settlement statement also tells whether the task has a callback_url: the webhook hook (a second read of the
 * task) runs only for those, on every settlement that found the task terminal (a duplicate too, so a crash between
 * the commit and the webhook enqueue is repaired by the retry), and never for a task without one.
 */
const logger = createLogger({ service: 'test', level: 'silent' });
const PRICE = 4000n;
let db: TestDatabase;
let tasks: TaskRepository;
let owner: TestOwner;

beforeAll(async () => {
  db = await createTestDatabase();
  tasks = new TaskRepository(db.dataSource);
  owner = await fundedOwner(db.dataSource, 'settle-handler', 1_000_000n);
});
afterAll(async () => db.drop());

const newTask = (callbackUrl?: string): Promise<TaskRecord> => tasks.createWithHold(testTask(owner, PRICE, { callbackUrl }));

it('tells the webhook hook about settled tasks with a callback_url only, duplicates included', async () => {
  const told: string[] = [];
  const handler = new SettleTaskHandler(db.dataSource, logger, {
    taskSettled: async (id) => {
      told.push(id);
    },
  });
  const withHook = await newTask('https://hooks.example.com/gmg');
  const without = await newTask();
  await tasks.complete(withHook.id, { images: [{ url: 'http://127.0.0.1/a.png' }] });
  await tasks.fail(without.id, { code: 'task_failed', message: 'Generation failed' });

  expect(await handler.settle(withHook.id)).toBe('captured');
  expect(await handler.settle(without.id)).toBe('released');
  expect(await handler.settle(withHook.id)).toBe('duplicate');
  expect(await handler.settle(without.id)).toBe('duplicate');
  expect(told).toEqual([withHook.id, withHook.id]);

  expect(await handler.settle(newTaskId())).toBe('not_found');
  const open = await newTask('https://hooks.example.com/gmg');
  await expect(handler.settle(open.id)).rejects.toThrow(/not terminal yet/);
  expect(told).toEqual([withHook.id, withHook.id]);
});

it('settles jobs arriving together in shared statements: each task once, its other copies duplicate, every balance right', async () => {
  const handler = new SettleTaskHandler(db.dataSource, logger);
  const accounts = new AccountRepository(db.dataSource);
  const before = (await accounts.get(owner.accountId))!;
  const list = await Promise.all(Array.from({ length: 12 }, () => newTask()));
  for (const [i, t] of list.entries()) {
    if (i % 3 === 0) await tasks.fail(t.id, { code: 'task_failed', message: 'x' });
    else await tasks.complete(t.id, { images: [{ url: 'http://127.0.0.1/a.png' }] });
  }
  // three deliveries of every task, all at once: they queue behind one another in batches
  const outcomes = await Promise.all(list.flatMap((t) => [1, 2, 3].map(async () => [t.id, await handler.settle(t.id)] as const)));
  for (const [i, t] of list.entries()) {
    const mine = outcomes
      .filter(([id]) => id === t.id)
      .map(([, o]) => o)
      .sort();
    expect(mine).toEqual([i % 3 === 0 ? 'released' : 'captured', 'duplicate', 'duplicate'].sort());
  }
  // from before the holds: nothing held any more, the completed ones spent, the failed ones back
  const after = (await accounts.get(owner.accountId))!;
  const captured = PRICE * BigInt(list.filter((_, i) => i % 3 !== 0).length);
  expect([after.held - before.held, after.spent - before.spent, after.available - before.available]).toEqual([0n, captured, -captured]);
});
