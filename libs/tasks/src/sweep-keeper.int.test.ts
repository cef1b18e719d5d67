/**
 * Self-healing after a Redis loss: the sweep scheduler comes back on its own and every open task is rebuilt from
 * Postgres. The loss is simulated by deleting this test's own Redis prefix (never a FLUSHALL of the shared Redis).
 */
import { QUEUES } from '@gmg/contracts';
import { settleTask } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createRedis, healSentinelKey, queueKeyPrefix, type Redis } from '@gmg/queue';
import { createTestDatabase, deleteRedisPrefix, uniqueRedisPrefix, waitFor, TEST_REDIS_TARGET, type TestDatabase } from '@gmg/testing';
import { createAdapterRegistry, createGatewayAdapter } from '@gmg/upstream';
import { startPoolWorker, type PoolWorker } from './pool-worker';
import { TaskViewStore } from './task-view.store';
import { NO_MEDIA_KEEPER } from './no-media-keeper.test-kit';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.test-kit';
import { seedAccount, seedChannel, seedTask, type SeededAccount } from './seed-task.test-kit';

const logger = createLogger({ service: 'test', level: 'silent' });
const INTERVAL_MS = 1000;

let db: TestDatabase;
let redis: Redis;
let prefix: string;
let up: FakeUpstream;
let account: SeededAccount;
let pw: PoolWorker | undefined;

beforeEach(async () => {
  db = await createTestDatabase();
  redis = createRedis(TEST_REDIS_TARGET, 'worker');
  prefix = uniqueRedisPrefix();
  // never finishes within the test: tasks stay open, so the rebuild has something to rebuild
  up = await startFakeUpstream({ pollsToComplete: 10_000 });
  await seedChannel(db.dataSource, up.baseUrl, up.apiKey);
  account = await seedAccount(db.dataSource);
});

afterEach(async () => {
  await pw?.close(true).catch(() => undefined);
  pw = undefined;
  await up.close();
  await deleteRedisPrefix(redis, prefix);
  await redis.quit();
  await db.drop();
});

const start = (sweepIntervalMs = INTERVAL_MS): Promise<PoolWorker> =>
  startPoolWorker(
    {
      pool: 'image',
      ds: db.dataSource,
      redis,
      prefix,
      adapters: createAdapterRegistry([createGatewayAdapter({ timeoutMs: 5000 })]),
      keeper: NO_MEDIA_KEEPER,
      logger,
      settlements: {
        enqueueSettlement: async (id) => {
          await settleTask(db.dataSource, id);
        },
      },
    },
    // a long orphan age: the plain sweep would not touch these fresh tasks, only the rebuild does
    { concurrency: 5, pollIntervalScale: 0.05, sweepIntervalMs, orphanAfterMs: 600_000, retryBaseMs: 200 },
  );

/**
 * Simulates a FLUSHALL for this test's keys only (the sentinel and the sweep scheduler among them). Not asserted
 * empty afterwards: the live worker may write a key (an event, the next keeper tick) at once.
 */
async function loseRedis(): Promise<void> {
  const queueKeys = queueKeyPrefix(prefix, QUEUES.image, 0);
  const keys = await redis.keys(`${queueKeys}:*`);
  expect(keys).toEqual(expect.arrayContaining([healSentinelKey(queueKeys), `${queueKeys}:${QUEUES.image}:repeat`]));
  expect(await deleteRedisPrefix(redis, prefix)).toBeGreaterThan(0);
}

describe('sweep keeper: the gateway heals itself after a Redis loss', () => {
  it('re-creates the pool sweep scheduler within two keeper checks after its keys are gone (the re-upsert timer)', async () => {
    pw = await start();
    expect(await pw.queue.getJobScheduler('sweep')).toBeTruthy();
    await loseRedis();
    // counted in the keeper's checks, not in wall time: a check running across the loss, then the one that re-upserts
    const ticksAtLoss = pw.keeper!.ticks;
    const ticksWhenBack = await waitFor(async () => ((await pw!.queue.getJobScheduler('sweep')) ? pw!.keeper!.ticks : undefined), {
      timeoutMs: 10 * INTERVAL_MS,
      intervalMs: 50,
      what: 'the sweep scheduler to come back',
    });
    expect(ticksWhenBack - ticksAtLoss).toBeLessThanOrEqual(2);
    // the loss was noticed (the sentinel is claimed again) and the scheduler holds its next sweep job
    await waitFor(async () => (await redis.exists(healSentinelKey(queueKeyPrefix(prefix, QUEUES.image, 0)))) === 1, {
      timeoutMs: 10 * INTERVAL_MS,
      what: 'sentinel',
    });
    expect(await pw.queue.getJobSchedulersCount()).toBe(1);
  });

  it('rebuilds every open task from Postgres: its job again under the same id (never twice), its view, no resubmit', async () => {
    pw = await start();
    const submitted = await Promise.all([0, 1, 2].map((i) => seedTask(db.dataSource, account, `in flight ${i}`)));
    for (const t of submitted) await pw.queue.add('task', { taskId: t.id, submitAttempts: 0, pollFailures: 0, excludedChannels: [] }, { jobId: t.id });
    for (const t of submitted) {
      await waitFor(async () => (await pw!.polls[0]!.present([t.id]))[0], { timeoutMs: 10_000, what: `${t.id} polling` });
    }
    // accepted by the edge (row committed) but its job never made it to Redis before the loss
    const unqueued = await seedTask(db.dataSource, account, 'committed, never enqueued');
    const all = [...submitted, unqueued];

    await loseRedis();
    const views = new TaskViewStore(redis, prefix);
    // driven again: a job (submitting, or about to hand the task to the poll path) or a due poll
    const driven = async (id: string): Promise<boolean> => Boolean(await pw!.queue.getJob(id)) || (await pw!.polls[0]!.present([id]))[0] === true;
    await waitFor(
      async () => {
        for (const t of all) {
          if (!(await driven(t.id)) || !(await views.read(t.id))) return undefined;
        }
        return true;
      },
      { timeoutMs: 10 * INTERVAL_MS, intervalMs: 50, what: 'every open task rebuilt (job or due poll + view)' },
    );

    for (const t of all) expect((await views.read(t.id))?.task.id).toBe(t.id);
    // the rebuilt jobs drive their tasks: the never-enqueued one is submitted, the others are polled, not resubmitted
    await waitFor(async () => up.submits.get(unqueued.id) === 1, { timeoutMs: 10_000, what: 'the unqueued task submitted' });
    const pollsBefore = submitted.map((t) => up.polls.get(up.idOf(t.id))?.length ?? 0);
    await waitFor(async () => submitted.every((t, i) => (up.polls.get(up.idOf(t.id))?.length ?? 0) > pollsBefore[i]!), {
      timeoutMs: 10_000,
      what: 'the submitted tasks polled again',
    });
    for (const t of submitted) expect(up.submits.get(t.id)).toBe(1);
    // a second rebuild finds every task driven (all four polling by now) and adds nothing
    await waitFor(async () => ((await pw!.polls[0]!.present(all.map((t) => t.id))).every(Boolean) ? true : undefined), {
      timeoutMs: 10_000,
      what: 'all four polling',
    });
    expect((await pw.sweeper.rebuild()).readded).toBe(0);
    const counts = await Promise.all(all.map(async (t) => ((await driven(t.id)) ? 1 : 0)));
    expect(counts).toEqual([1, 1, 1, 1]);
  });

  it('isolates a task that throws: the sweep logs it, counts it and still handles the rest', async () => {
    pw = await start(0);
    const good = await seedTask(db.dataSource, account, 'fine');
    const bad = await seedTask(db.dataSource, account, 'poisoned');
    const realAdd = pw.queue.add.bind(pw.queue);
    const added: string[] = [];
    pw.queue.add = (async (...args: Parameters<typeof realAdd>) => {
      const { taskId } = args[1] as { taskId: string };
      if (taskId === bad.id) throw new Error('injected: add refused');
      added.push(taskId);
      return realAdd(...args);
    }) as typeof realAdd;
    const r = await pw.sweeper.rebuild();
    expect([r.readded, r.failed]).toEqual([1, 1]);
    // the good task's job was added (the running worker may already have taken and finished it: not read back)
    expect(added).toEqual([good.id]);
    expect(await pw.queue.getJob(bad.id)).toBeFalsy();
  });
});
