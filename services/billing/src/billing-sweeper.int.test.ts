import { TaskRecoveryRepository, TaskRepository, settleTask, type TaskRecord } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { Worker } from 'bullmq';
import { batchErrors } from '@gmg/observability';
import { QUEUES, settleJobId } from '@gmg/contracts';
import { createBillingQueue, createRedis, jobPresence, queueKeyPrefix, type BillingQueue, type Redis } from '@gmg/queue';
import {
  TEST_REDIS_URL,
  createTestDatabase,
  deleteRedisPrefix,
  fundedOwner,
  testTask,
  uniqueRedisPrefix,
  waitFor,
  type TestDatabase,
  type TestOwner,
} from '@gmg/testing';
import { BillingSweeper } from './billing-sweeper';
import type { SettleTaskHandler } from './settle-task.handler';

const logger = createLogger({ service: 'test', level: 'silent' });

/** gmg_batch_errors_total{batch} as the metrics registry holds it now. */
async function batchErrorCount(batch: string): Promise<number> {
  return (await batchErrors.get()).values.find((v) => v.labels.batch === batch)?.value ?? 0;
}
const PRICE = 100n;

let db: TestDatabase;
let tasks: TaskRepository;
let owner: TestOwner;

beforeAll(async () => {
  db = await createTestDatabase();
  tasks = new TaskRepository(db.dataSource);
  owner = await fundedOwner(db.dataSource, 'sweeper-test', 1_000_000n);
});

afterAll(async () => {
  await db?.drop();
});

const newTask = (): Promise<TaskRecord> => tasks.createWithHold(testTask(owner, PRICE));
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
  let redis: Redis;
  let prefix: string;
  let queue: BillingQueue;
  beforeAll(() => {
    redis = createRedis(TEST_REDIS_URL, 'worker');
    prefix = uniqueRedisPrefix();
    queue = createBillingQueue(redis, prefix);
  });
  afterAll(async () => {
    await queue.close();
    await deleteRedisPrefix(redis, prefix);
    await redis.quit();
  });

  /** Settle jobs for these tasks, run to `completed` by a worker that does nothing (they hold the settle ids). */
  async function finishedSettleJobs(taskIds: string[]): Promise<void> {
    for (const id of taskIds) await queue.add('settle', { taskId: id }, { jobId: settleJobId(id) });
    const connection = redis.duplicate();
    const worker = new Worker(QUEUES.billing, async () => 'noop', { connection, prefix: queueKeyPrefix(prefix, QUEUES.billing) });
    try {
      await waitFor(async () => (await Promise.all(taskIds.map(async (id) => (await queue.getJob(settleJobId(id)))?.isCompleted()))).every(Boolean), {
        what: 'settle jobs completed',
      });
    } finally {
      await worker.close();
      connection.disconnect();
    }
  }

  it('logs and skips a task whose settlement throws, and still settles the tasks after it', async () => {
    const poisoned = await newTask();
    await tasks.complete(poisoned.id, {});
    const healthy = await newTask();
    await tasks.complete(healthy.id, {});
    expect([...(await unsettledIds())].sort()).toEqual([poisoned.id, healthy.id].sort());

    // A finished settle job holds each settle id, so the sweeper settles directly through the settler.
    await finishedSettleJobs([poisoned.id, healthy.id]);
    const settler = {
      settle: async (taskId: string) => {
        if (taskId === poisoned.id) throw new Error('settlement keeps throwing');
        return settleTask(db.dataSource, taskId);
      },
    } as unknown as SettleTaskHandler;
    const sweeper = new BillingSweeper(tasks, new TaskRecoveryRepository(db.dataSource), [queue], settler, logger, 0);

    const before = await batchErrorCount('billing_settle_task');
    expect(await sweeper.sweep()).toEqual({ resent: 0, settledDirectly: 1, failed: 1, webhooksResent: 0 });
    // the failure is counted, not only logged
    expect(await batchErrorCount('billing_settle_task')).toBe(before + 1);
    expect(await kinds(healthy.id)).toEqual(['hold', 'capture']);
    expect(await kinds(poisoned.id)).toEqual(['hold']);
    expect(await unsettledIds()).toEqual([poisoned.id]);
    await settleTask(db.dataSource, poisoned.id);
  });

  it('counts a failed owed-webhook walk and a failed idempotency expiry under their own batch labels, and the sweep goes on', async () => {
    // the sweep's only use of the task repository
    const failing = {
      expireIdempotencyKeys: async () => {
        throw new Error('expiry statement failed');
      },
    } as unknown as TaskRepository;
    const owedFails = {
      repo: {
        owedIds: async () => {
          throw new Error('owed webhooks query failed');
        },
      },
      queues: [],
      lookbackMs: 600_000,
      maxAgeMs: 3_600_000,
    };
    const sweeper = new BillingSweeper(failing, new TaskRecoveryRepository(db.dataSource), [queue], {} as SettleTaskHandler, logger, 0, owedFails);
    const before = { webhooks: await batchErrorCount('billing_webhooks'), expiry: await batchErrorCount('idempotency_expiry') };
    expect(await sweeper.sweep()).toMatchObject({ failed: 0, webhooksResent: 0 });
    expect({ webhooks: await batchErrorCount('billing_webhooks'), expiry: await batchErrorCount('idempotency_expiry') }).toEqual({
      webhooks: before.webhooks + 1,
      expiry: before.expiry + 1,
    });
  });

  it('reads a page of settle jobs in one pipeline: no job → sent again, a waiting job → left to billing, a finished one → settled here', async () => {
    const [lost, waiting, finished] = [await newTask(), await newTask(), await newTask()];
    for (const t of [lost, waiting, finished]) await tasks.complete(t.id, {});
    await finishedSettleJobs([finished.id]);
    await queue.add('settle', { taskId: waiting.id }, { jobId: settleJobId(waiting.id) });
    expect(
      await jobPresence(
        queue,
        [lost, waiting, finished].map((t) => settleJobId(t.id)),
      ),
    ).toEqual(['missing', 'live', 'finished']);

    const settled: string[] = [];
    const settler = {
      settle: async (id: string) => {
        settled.push(id);
        return settleTask(db.dataSource, id);
      },
    } as unknown as SettleTaskHandler;
    const sweeper = new BillingSweeper(tasks, new TaskRecoveryRepository(db.dataSource), [queue], settler, logger, 0);
    expect(await sweeper.sweep()).toEqual({ resent: 1, settledDirectly: 1, failed: 0, webhooksResent: 0 });
    expect(settled).toEqual([finished.id]);
    expect(await kinds(finished.id)).toEqual(['hold', 'capture']);
    expect(await (await queue.getJob(settleJobId(lost.id)))?.getState()).toBe('waiting');
    expect(await kinds(waiting.id)).toEqual(['hold']);
  });
});
