import { Worker } from 'bullmq';
import { renderMetrics } from '@gmg/observability';
import { TEST_REDIS_URL, deleteRedisPrefix, uniqueRedisPrefix, waitFor } from '@gmg/testing';
import { BACKLOG_CAPS, BacklogGate } from './backlog';
import { createRedis, type Redis } from './connection';
import { createBillingQueue, createTaskQueue, createWebhookQueue, enqueueSettlement, enqueueWebhook } from './producers';

/**
 * The backlog caps (issue 38 item 4) on a real Redis: failed jobs trimmed to their count, and settle and webhook
 * backlogs that stop growing at their cap (the work stays in Postgres; the billing sweep sends it again).
 */
let redis: Redis;
let prefix: string;
const closing: Array<{ close(): Promise<unknown> }> = [];

beforeEach(() => {
  redis = createRedis(TEST_REDIS_URL, 'worker');
  prefix = uniqueRedisPrefix();
});

afterEach(async () => {
  await Promise.all(closing.splice(0).map((c) => c.close()));
  await deleteRedisPrefix(redis, prefix);
  await redis.quit();
});

const deferred = async (queue: string): Promise<number> =>
  Number(new RegExp(`gmg_backlog_deferred_total\\{queue="${queue}"\\} (\\d+)`).exec((await renderMetrics()).body)?.[1] ?? 0);

describe('backlog caps', () => {
  it(`failed task jobs are trimmed to BACKLOG_CAPS.failedJobs (${BACKLOG_CAPS.failedJobs}), the oldest first`, async () => {
    const queue = createTaskQueue('image', redis, prefix);
    closing.push(queue);
    const n = BACKLOG_CAPS.failedJobs + 50;
    // one attempt each (the queue's other defaults, removeOnFail among them, stay)
    for (let i = 0; i < n; i += 1000)
      await queue.addBulk(
        Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({
          name: 'task' as const,
          data: { taskId: `task_${String(i + k).padStart(6, '0')}` },
          opts: { jobId: `task_${String(i + k).padStart(6, '0')}`, attempts: 1 },
        })),
      );
    const conn = redis.duplicate();
    const worker = new Worker(
      queue.name,
      async () => {
        throw new Error('upstream refused');
      },
      { connection: conn, prefix: (queue.opts as { prefix: string }).prefix, concurrency: 500 },
    );
    closing.push({ close: async () => (await worker.close(), await conn.quit()) });
    await waitFor(async () => (await queue.getJobCounts('wait')).wait === 0 && (await queue.getJobCounts('active')).active === 0, {
      timeoutMs: 120_000,
      intervalMs: 200,
      what: 'every job failed',
    });
    const failed = await queue.getFailedCount();
    expect(failed).toBe(BACKLOG_CAPS.failedJobs);
    // the newest are kept (the failed set is ordered by when each failed; the first to fail went first)
    expect(await queue.getJob('task_000000')).toBeUndefined();
  }, 180_000);

  it('settle, webhook and failed-job caps are on every queue the producers create', () => {
    for (const q of [
      createTaskQueue('video', redis, prefix),
      createBillingQueue(redis, prefix),
      createWebhookQueue(redis, prefix, { attempts: 14, backoffMs: 10_000 }),
    ]) {
      closing.push(q);
      expect(q.defaultJobOptions.removeOnFail).toEqual(expect.objectContaining({ count: BACKLOG_CAPS.failedJobs }));
    }
  });

  it('a settle backlog at its cap takes no more jobs (counted), and takes them again once it has room', async () => {
    const billing = createBillingQueue(redis, prefix);
    closing.push(billing);
    await billing.pause(); // billing down: nothing consumes
    const gate = new BacklogGate(5, 0);
    const before = await deferred(billing.name);
    const answers: boolean[] = [];
    for (let i = 0; i < 8; i++) answers.push(await enqueueSettlement(billing, `task_s${i}`, gate));
    expect(answers).toEqual([true, true, true, true, true, false, false, false]);
    expect((await billing.getJobs(['wait', 'paused', 'delayed'])).length).toBe(5);
    expect((await deferred(billing.name)) - before).toBe(3);
    // room again (billing worked one off): the next one is taken
    await (await billing.getJob('settle-task_s0'))!.remove();
    expect(await enqueueSettlement(billing, 'task_s5', gate)).toBe(true);
    expect(await enqueueSettlement(billing, 'task_s6', gate)).toBe(false);
  });

  it('a webhook backlog at its cap takes no more deliveries (counted)', async () => {
    const webhooks = createWebhookQueue(redis, prefix, { attempts: 14, backoffMs: 10_000 });
    closing.push(webhooks);
    await webhooks.pause();
    const gate = new BacklogGate(3, 0);
    const before = await deferred(webhooks.name);
    const answers: boolean[] = [];
    for (let i = 0; i < 5; i++) answers.push(await enqueueWebhook(webhooks, { taskId: `task_w${i}`, event: 'completed' }, gate));
    expect(answers).toEqual([true, true, true, false, false]);
    expect((await webhooks.getJobs(['wait', 'paused', 'delayed'])).length).toBe(3);
    expect((await deferred(webhooks.name)) - before).toBe(2);
  });
});
