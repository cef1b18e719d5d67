import { QUEUES } from '@gmg/contracts';
import { createLogger } from '@gmg/logger';
import {
  REDIS_BYTES_PER_TASK,
  checkRedisMemory,
  checkRedisReady,
  createRedis,
  queueKeyPrefix,
  redisMaxmemoryFor,
  redisMemory,
  taskViewKey,
  type Redis,
} from '@gmg/queue';
import { createTestDatabase, startLocalRedis, waitFor, type LocalRedis, type TestDatabase } from '@gmg/testing';
import { createAdapterRegistry, createGatewayAdapter } from '@gmg/upstream';
import { startPoolWorker } from './pool-worker';
import { TaskViewStore } from './task-view.store';
import { NO_MEDIA_KEEPER } from './no-media-keeper.test-kit';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.test-kit';
import { seedAccount, seedChannel, seedTask } from './seed-task.test-kit';

/**
 * Redis memory at steady state, on a Redis of this test's own (a free port; never the machine's): what one task
 * leaves behind (its terminal view, its completed job, its settlement job) measured, held to REDIS_BYTES_PER_TASK,
 * and a Redis whose maxmemory comes from redisMaxmemoryFor holding that load with every write accepted.
 */
const logger = createLogger({ service: 'test', level: 'silent' });
const PREFIX = 'gmgmem';
jest.setTimeout(180_000);

let db: TestDatabase;
let up: FakeUpstream;
const cleanup: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  db = await createTestDatabase();
  up = await startFakeUpstream({ pollsToComplete: 1 });
  await seedChannel(db.dataSource, up.baseUrl, up.apiKey);
});

afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => undefined);
  await up.close();
  await db.drop();
});

/** A funded account, and an image pool worker on `server` against `ds` (closed after the file). */
async function workerOn(server: LocalRedis, ds: TestDatabase['dataSource'], pollIntervalScale: number) {
  const redis = createRedis(server.url, 'worker');
  cleanup.push(() => redis.quit());
  const account = await seedAccount(ds, 10_000_000_000n);
  const pw = await startPoolWorker(
    { pool: 'image', ds, redis, prefix: PREFIX, adapters: createAdapterRegistry([createGatewayAdapter({ timeoutMs: 5000 })]), keeper: NO_MEDIA_KEEPER, logger },
    { concurrency: 20, pollIntervalScale, sweepIntervalMs: 0, retryBaseMs: 100 },
  );
  cleanup.push(() => pw.close(true));
  return { redis, account, pw, views: new TaskViewStore(redis, PREFIX) };
}

/**
 * Runs tasks to the end through a pool worker on `server` (settlements go to its billing queue): a warm-up batch
 * (scripts loaded, hash tables grown), then `onWarm`, then `n` more.
 */
async function runLoad(server: LocalRedis, n: number, onWarm: (redis: Redis) => Promise<void> = async () => undefined): Promise<{ redis: Redis }> {
  const { redis, account, pw, views } = await workerOn(server, db.dataSource, 0.01);
  const billing = queueKeyPrefix(PREFIX, QUEUES.billing);
  let total = 0;
  const batch = async (count: number): Promise<void> => {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const t = await seedTask(db.dataSource, account, `memory ${total + i}`);
      // what the edge does after its commit: the view, then the job
      await views.write(t);
      await pw.queue.add('task', { taskId: t.id, submitAttempts: 0, pollFailures: 0, excludedChannels: [] }, { jobId: t.id });
      ids.push(t.id);
    }
    total += count;
    await waitFor(async () => ((await redis.llen(`${billing}:${QUEUES.billing}:wait`)) >= total ? true : undefined), {
      timeoutMs: 120_000,
      intervalMs: 200,
      what: `${total} settlements requested`,
    });
    const done = (await db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1) AND status = 'completed'`, [ids]))[0].n;
    expect(done).toBe(count);
  };
  await batch(20);
  await onWarm(redis);
  await batch(n);
  return { redis };
}

describe('Redis memory per task', () => {
  it('a finished task leaves at most REDIS_BYTES_PER_TASK in Redis, and a Redis sized by redisMaxmemoryFor holds the load', async () => {
    const N = 300;
    // 1. measure on an unlimited Redis
    const free = await startLocalRedis();
    cleanup.push(() => free.stop());
    let before = 0;
    const { redis } = await runLoad(free, N, async (r) => {
      before = (await redisMemory(r))[0]!.usedBytes;
    });
    const after = (await redisMemory(redis))[0]!.usedBytes;
    const perTask = (after - before) / N;
    const someId: string = (await db.dataSource.query(`SELECT id FROM tasks LIMIT 1`))[0].id;
    const usage = async (key: string): Promise<number> => Number(await redis.memory('USAGE', key));
    const sampleView = await usage(taskViewKey(PREFIX, someId));
    const taskKeys = queueKeyPrefix(PREFIX, QUEUES.image, 0);
    const billingKeys = queueKeyPrefix(PREFIX, QUEUES.billing);
    process.stdout.write(
      `job ${await usage(`${taskKeys}:${QUEUES.image}:${someId}`)} settle ${await usage(`${billingKeys}:${QUEUES.billing}:settle-${someId}`)} ` +
        `events ${await usage(`${taskKeys}:${QUEUES.image}:events`)}/${await redis.xlen(`${taskKeys}:${QUEUES.image}:events`)} ` +
        `bevents ${await usage(`${billingKeys}:${QUEUES.billing}:events`)} completed ${await usage(`${taskKeys}:${QUEUES.image}:completed`)}\n`,
    );
    const budget = REDIS_BYTES_PER_TASK.view + REDIS_BYTES_PER_TASK.events + REDIS_BYTES_PER_TASK.settle;
    // the sample view is one task's; the per-task figure is the whole delta (keys, set entries, capped event streams)
    process.stdout.write(`redis bytes per finished task: ${perTask.toFixed(0)} (view ${sampleView}); budget ${budget}\n`);
    expect(sampleView).toBeLessThanOrEqual(REDIS_BYTES_PER_TASK.view);
    expect(perTask).toBeLessThanOrEqual(budget);

    // 2. the same load on a Redis whose maxmemory is the formula's for it: every write accepted, room left
    const maxmemory = redisMaxmemoryFor({ tasksPerHour: N, tasksPerDay: N, openTasks: 0, keyedSubmitsPerDay: 0, shards: 1 });
    const sized = await startLocalRedis({ maxmemory });
    cleanup.push(() => sized.stop());
    const r2 = await runLoad(sized, N);
    const [mem] = await redisMemory(r2.redis);
    expect(mem!.maxBytes).toBe(maxmemory);
    expect(mem!.usedBytes).toBeLessThan(maxmemory);
    expect(await sized.cli('INFO', 'errorstats')).not.toMatch(/errorstat_OOM/);
    await expect(checkRedisMemory(r2.redis)).resolves.toBeUndefined();

    // 3. past its maxmemory, writes fail and the memory check says why (reported beside readiness, never a reason to
    // be unready: a full shard is the same for every replica — this process's own connection still answers)
    let refusal: Error | undefined;
    for (let i = 0; i < 10_000 && !refusal; i++) {
      await r2.redis.set(`${PREFIX}:filler:${i}`, 'x'.repeat(64 * 1024)).catch((e: Error) => {
        refusal = e;
      });
    }
    expect(refusal?.message).toMatch(/OOM/);
    await expect(checkRedisMemory(r2.redis)).rejects.toMatchObject({ readiness: 'full' });
    await expect(checkRedisReady(r2.redis)).resolves.toBeUndefined();
  });

  it('a task in flight (polling upstream) holds at most REDIS_BYTES_PER_TASK.open + view: its due poll, no job', async () => {
    const N = 300;
    const openDb = await createTestDatabase();
    cleanup.push(() => openDb.drop());
    const never = await startFakeUpstream({ pollsToComplete: 1_000_000_000 });
    cleanup.push(() => never.close());
    await seedChannel(openDb.dataSource, never.baseUrl, never.apiKey);
    const server = await startLocalRedis();
    cleanup.push(() => server.stop());
    const { redis, account, pw, views } = await workerOn(server, openDb.dataSource, 0.2);
    const start = async (count: number, from: number): Promise<void> => {
      for (let i = 0; i < count; i++) {
        const t = await seedTask(openDb.dataSource, account, `open ${from + i}`);
        await views.write(t);
        await pw.queue.add('task', { taskId: t.id, submitAttempts: 0, pollFailures: 0, excludedChannels: [] }, { jobId: t.id });
      }
      // A task's due poll is added inside its submit job, which is removed only after that: wait for both, so the
      // memory read below never counts a job still finishing.
      await waitFor(
        async () => {
          const polls = await pw.polls[0]!.counts();
          if (polls.waiting + polls.claimed < from + count) return undefined;
          const jobs = await pw.queue.getJobCounts('waiting', 'active', 'delayed');
          return jobs.waiting + jobs.active + jobs.delayed === 0 ? true : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 100, what: `${from + count} tasks polling, their submit jobs gone` },
      );
    };
    await start(20, 0);
    const before = (await redisMemory(redis))[0]!.usedBytes;
    await start(N, 20);
    const perOpen = ((await redisMemory(redis))[0]!.usedBytes - before) / N;
    // every submit job is gone (removeOnComplete): only the due poll and the view stay per task
    expect(await pw.queue.getJobCounts('completed', 'waiting', 'active')).toMatchObject({ completed: 0, waiting: 0, active: 0 });
    process.stdout.write(
      `redis bytes per task in flight: ${perOpen.toFixed(0)}; budget ${REDIS_BYTES_PER_TASK.open + REDIS_BYTES_PER_TASK.view + REDIS_BYTES_PER_TASK.events}\n`,
    );
    expect(perOpen).toBeLessThanOrEqual(REDIS_BYTES_PER_TASK.open + REDIS_BYTES_PER_TASK.view + REDIS_BYTES_PER_TASK.events);
  });
});
