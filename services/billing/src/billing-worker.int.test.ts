import { settleJobId } from '@gmg/contracts';
import { AccountRepository, TaskRepository, newTaskId, type TaskRecord } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createBillingQueue, createRedis, enqueueSettlement, shardOf, type Redis } from '@gmg/queue';
import {
  createTestDatabase,
  fundedOwner,
  testTask,
  uniqueRedisPrefix,
  waitFor,
  TEST_REDIS_URL,
  type TestDatabase,
  type TestOwner,
  deleteRedisPrefix,
} from '@gmg/testing';
import { startBillingWorker, type BillingWorker } from './billing-worker';

const logger = createLogger({ service: 'test', level: 'silent' });
const START = 1_000_000n;
const PRICE = 2500n;

let db: TestDatabase;
let redis: Redis;
let prefix: string;
let billing: BillingWorker;
let tasks: TaskRepository;
let owner: TestOwner;

beforeAll(async () => {
  db = await createTestDatabase();
  redis = createRedis(TEST_REDIS_URL, 'worker');
  prefix = uniqueRedisPrefix();
  tasks = new TaskRepository(db.dataSource);
  billing = await startBillingWorker({ ds: db.dataSource, redis, prefix, logger }, { concurrency: 5, sweepIntervalMs: 0, unsettledAfterMs: 0 });
});

beforeEach(async () => {
  owner = await fundedOwner(db.dataSource, 'billing-test', START);
});

afterAll(async () => {
  await billing.close(true);
  await deleteRedisPrefix(redis, prefix);
  await redis.quit();
  await db.drop();
});

const newTask = (id = newTaskId()): Promise<TaskRecord> => tasks.createWithHold(testTask(owner, PRICE, { id }));
const account = async () => (await new AccountRepository(db.dataSource).get(owner.accountId))!;
const entries = async (taskId: string): Promise<string[]> =>
  (await db.dataSource.query(`SELECT kind FROM ledger_entries WHERE task_id = $1 ORDER BY id`, [taskId])).map((r: { kind: string }) => r.kind);

describe('billing worker', () => {
  it('captures a completed task exactly once although three settle jobs arrive', async () => {
    const t = await newTask();
    await tasks.complete(t.id, { images: [{ url: 'http://127.0.0.1/x.png' }] });
    await billing.queues[0]!.add('settle', { taskId: t.id }, { jobId: settleJobId(t.id) });
    await billing.queues[0]!.add('settle', { taskId: t.id }, { jobId: settleJobId(t.id) });
    await billing.queues[0]!.add('settle', { taskId: t.id }, { jobId: `${settleJobId(t.id)}-replayed` });
    await waitFor(async () => (await billing.queues[0]!.getJob(`${settleJobId(t.id)}-replayed`))?.isCompleted(), { what: 'replayed settle' });
    await waitFor(async () => (await billing.queues[0]!.getJob(settleJobId(t.id)))?.isCompleted(), { what: 'settle' });
    expect(await entries(t.id)).toEqual(['hold', 'capture']);
    const a = await account();
    expect([a.available, a.held, a.spent]).toEqual([START - PRICE, 0n, PRICE]);
  });

  it('releases a failed task in full', async () => {
    const t = await newTask();
    await tasks.fail(t.id, { code: 'task_failed', message: 'Generation failed' });
    await billing.queues[0]!.add('settle', { taskId: t.id }, { jobId: settleJobId(t.id) });
    await waitFor(async () => (await entries(t.id)).includes('release'), { what: 'release' });
    expect(await entries(t.id)).toEqual(['hold', 'release']);
    const a = await account();
    expect([a.available, a.held, a.spent]).toEqual([START, 0n, 0n]);
  });

  it('retries a settlement that arrives before the task ended, and settles once it has', async () => {
    const t = await newTask();
    await billing.queues[0]!.add('settle', { taskId: t.id }, { jobId: settleJobId(t.id) });
    await waitFor(async () => ((await billing.queues[0]!.getJob(settleJobId(t.id)))?.attemptsMade ?? 0) >= 1, { what: 'a failed attempt' });
    expect(await entries(t.id)).toEqual(['hold']);
    await tasks.complete(t.id, {});
    await waitFor(async () => (await entries(t.id)).includes('capture'), { timeoutMs: 15_000, what: 'capture on retry' });
  });

  it('sweeps a terminal task that was never settled, also when a finished job holds its settle id', async () => {
    const lost = await newTask();
    await tasks.complete(lost.id, {});
    // A settle job that finished before the task existed ("not_found") blocks re-adding under the same id.
    const blockedId = newTaskId();
    await billing.queues[0]!.add('settle', { taskId: blockedId }, { jobId: settleJobId(blockedId) });
    await waitFor(async () => (await billing.queues[0]!.getJob(settleJobId(blockedId)))?.isCompleted(), { what: 'not_found job done' });
    const blocked = await newTask(blockedId);
    await tasks.fail(blocked.id, { code: 'task_failed', message: 'x' });

    const r = await billing.sweeper.sweep();
    expect(r).toEqual({ resent: 1, settledDirectly: 1, failed: 0, webhooksResent: 0 });
    await waitFor(async () => (await entries(lost.id)).includes('capture'), { what: 'swept capture' });
    expect(await entries(blocked.id)).toEqual(['hold', 'release']);
    expect(await billing.sweeper.sweep()).toEqual({ resent: 0, settledDirectly: 0, failed: 0, webhooksResent: 0 });
  });

  it('consumes every shard of the settlement queue, and once lowered to one, moves what waits on the retired shard at its sweep', async () => {
    const own = uniqueRedisPrefix();
    const two = await startBillingWorker(
      { ds: db.dataSource, redis, prefix: own, logger },
      { concurrency: 4, shards: 2, sweepIntervalMs: 0, unsettledAfterMs: 0 },
    );
    let one: BillingWorker | undefined;
    try {
      const done = await Promise.all(Array.from({ length: 16 }, () => newTask()));
      for (const t of done) await tasks.complete(t.id, {});
      expect(new Set(done.map((t) => shardOf(t.id, 2))).size).toBe(2);
      for (const t of done) await enqueueSettlement(two.queues, t.id);
      await waitFor(async () => ((await Promise.all(done.map((t) => entries(t.id)))).every((e) => e.includes('capture')) ? true : undefined), {
        what: 'both shards settled',
      });
      await two.close();

      // lowered to 1: settlements an old two-shard replica put on shard 1 meanwhile wait where nobody looks now
      one = await startBillingWorker(
        { ds: db.dataSource, redis, prefix: own, logger },
        { concurrency: 4, shards: 1, sweepIntervalMs: 0, unsettledAfterMs: 3600_000 },
      );
      const stranded = await Promise.all(Array.from({ length: 4 }, () => newTask()));
      const shard1 = createBillingQueue(redis, own, 1);
      for (const t of stranded) {
        await tasks.fail(t.id, { code: 'task_failed', message: 'x' });
        await enqueueSettlement(shard1, t.id);
      }
      await shard1.close();
      // the sweep (its Postgres pass looks only at tasks an hour unsettled here) moves them; shard 0 settles them
      const sweep = await one.queues[0]!.add('sweep', {});
      await waitFor(async () => ((await one!.queues[0]!.getJob(String(sweep.id)))?.finishedOn ? true : undefined), { what: 'the sweep' });
      expect((await one.queues[0]!.getJob(String(sweep.id)))!.returnvalue).toMatchObject({ retiredMoved: stranded.length, resent: 0, settledDirectly: 0 });
      await waitFor(async () => ((await Promise.all(stranded.map((t) => entries(t.id)))).every((e) => e.includes('release')) ? true : undefined), {
        what: 'moved settled',
      });
      for (const t of [...done, ...stranded]) expect((await entries(t.id)).length).toBe(2);
    } finally {
      await two.close(true).catch(() => undefined);
      await one?.close(true);
      await deleteRedisPrefix(redis, own);
    }
  });
});
