import { Worker } from 'bullmq';
import { QUEUES, settleJobId, webhookJobId } from '@gmg/contracts';
import { TEST_REDIS_URL, deleteRedisPrefix, uniqueRedisPrefix, waitFor } from '@gmg/testing';
import { createRedis, type Redis } from './connection';
import { billingQueueKeyPrefix, shardOf } from './keys';
import { Producers, createBillingQueue, createBillingQueueShards, createWebhookQueueShards, enqueueWebhook, type BillingQueue } from './producers';
import { drainRetiredShards } from './retired-shards';

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

/** `n` task ids whose shard among `shards` is `shard`. */
function idsOnShard(shard: number, shards: number, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n && i < 10_000; i++) if (shardOf(`task_${i}`, shards) === shard) out.push(`task_${i}`);
  return out;
}

const waitingIds = async (q: BillingQueue): Promise<string[]> =>
  (await q.getJobs(['wait', 'delayed', 'prioritized', 'paused'])).map((j) => String(j.id)).sort();

describe('billing and webhook queues in shards (QUEUE_SHARDS billing=K, webhook=K)', () => {
  it('one shard keeps the unsharded key names; K shards put a task on shard shardOf(id, K), once however often it is asked for', async () => {
    const one = new Producers(redis, prefix);
    closing.push(one);
    await one.requestSettlement('task_a');
    expect(await redis.exists(`{${prefix}:${QUEUES.billing}}:${QUEUES.billing}:${settleJobId('task_a')}`)).toBe(1);

    const two = new Producers(redis, prefix, { billing: 2, webhook: 2 });
    closing.push(two);
    // shard 0 of two is the one queue of before: its jobs stay where a two-shard billing looks
    await (await two.billing[0]!.getJob(settleJobId('task_a')))!.remove();

    const ids = Array.from({ length: 20 }, (_, i) => `task_${i}`);
    for (const id of ids) {
      await two.requestSettlement(id);
      await two.requestSettlement(id);
    }
    const perShard = [0, 1].map((shard) => ids.filter((id) => shardOf(id, 2) === shard).length);
    expect(perShard.every((n) => n > 0)).toBe(true);
    expect(await Promise.all(two.billing.map((q) => q.getWaitingCount()))).toEqual(perShard);
    for (const id of ids) expect(await two.billing[shardOf(id, 2)]!.getJob(settleJobId(id))).toBeTruthy();
    expect(await redis.exists(`{${prefix}:${QUEUES.billing}:1}:${QUEUES.billing}:meta`)).toBe(1);

    const webhooks = createWebhookQueueShards(redis, prefix, { attempts: 2, backoffMs: 1000 }, 2);
    closing.push(...webhooks);
    for (const id of ids) for (let i = 0; i < 2; i++) await enqueueWebhook(webhooks, { taskId: id, event: 'completed' });
    expect(await Promise.all(webhooks.map((q) => q.getWaitingCount()))).toEqual(perShard);
    expect(
      await webhooks[1]!.getJob(
        webhookJobId(
          ids.find((id) => shardOf(id, 2) === 1)!,
          'completed',
        ),
      ),
    ).toBeTruthy();

    // the queue metrics see every shard, summed under the queue's name
    const seen = await two.jobCounts();
    expect([seen[QUEUES.billing]!.counts.waiting, seen[QUEUES.webhook]!.counts.waiting]).toEqual([ids.length, ids.length]);
  });

  it('the count lowered: waiting and delayed jobs on a retired shard move to their task’s current shard; a job a consumer holds stays with it', async () => {
    const old = createBillingQueueShards(redis, prefix, 2);
    const current = [createBillingQueue(redis, prefix, 0)];
    closing.push(...old, ...current);
    const [held, ...rest] = idsOnShard(1, 2, 6);
    // an old replica (K = 2) still consumes shard 1 and is inside `held`'s settlement
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const ran: string[] = [];
    const oldReplica = new Worker(
      QUEUES.billing,
      async (job) => {
        ran.push(String(job.id));
        if (job.id === settleJobId(held!)) await gate;
      },
      { connection: redis, prefix: billingQueueKeyPrefix(prefix, QUEUES.billing, 1), concurrency: 1 },
    );
    closing.push(oldReplica);
    await old[1]!.add('settle', { taskId: held! }, { jobId: settleJobId(held!) });
    await waitFor(async () => ((await old[1]!.getJob(settleJobId(held!)))?.processedOn ? true : undefined), { what: 'the old replica took the first job' });
    for (const [i, id] of rest.entries()) await old[1]!.add('settle', { taskId: id }, { jobId: settleJobId(id), ...(i === 0 ? { delay: 3600_000 } : {}) });

    const moved = await drainRetiredShards({
      redis,
      name: QUEUES.billing,
      keyPrefix: (shard) => billingQueueKeyPrefix(prefix, QUEUES.billing, shard),
      open: (shard) => createBillingQueue(redis, prefix, shard),
      current,
    });
    expect(moved).toBe(rest.length);
    expect(await waitingIds(current[0]!)).toEqual(rest.map(settleJobId).sort());
    expect(await waitingIds(old[1]!)).toEqual([]);
    // the held job finishes where it runs; nothing else ran twice there
    release();
    await waitFor(async () => ((await old[1]!.getJob(settleJobId(held!)))?.finishedOn ? true : undefined), { what: 'the held job done' });
    expect(ran).toEqual([settleJobId(held!)]);
    // a second pass finds nothing left to move
    expect(
      await drainRetiredShards({
        redis,
        name: QUEUES.billing,
        keyPrefix: (s) => billingQueueKeyPrefix(prefix, QUEUES.billing, s),
        open: (s) => createBillingQueue(redis, prefix, s),
        current,
      }),
    ).toBe(0);
  });
});
