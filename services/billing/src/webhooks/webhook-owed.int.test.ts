/**
 * Webhooks Postgres says are owed, after Redis lost their jobs (a Redis master killed before the write replicated,
 * or the webhook queue's shard failed over empty): the billing sweep, or the rebuild after the loss, enqueues them
 * again, and each is delivered once. Real Redis (this test's prefix only) and Postgres; a loopback receiver.
 */
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { QUEUES, webhookJobId } from '@gmg/contracts';
import { TaskRecoveryRepository, TaskRepository, WebhookRepository, settleTask } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import {
  BacklogGate,
  clearWebhookDeferral,
  createRedis,
  createWebhookQueue,
  enqueueWebhook,
  jobPresence,
  queueKeyPrefix,
  webhookDeferrals,
  webhookDeferredKey,
  type Redis,
  type WebhookQueue,
} from '@gmg/queue';
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
import { BillingSweeper } from '../billing-sweeper';
import { startBillingWorker, type BillingWorker } from '../billing-worker';
import type { SettleTaskHandler } from '../settle-task.handler';
import { LOOPBACK_WEBHOOKS } from '../loopback-webhooks.test-kit';
import { startWebhookWorker, type WebhookWorker } from './webhook-worker';

const logger = createLogger({ service: 'test', level: 'silent' });
const INTERVAL_MS = 500;

let db: TestDatabase;
let redis: Redis;
let receiver: Server;
let base: string;
const received = new Map<string, number>();
let owner: TestOwner;
let tasks: TaskRepository;

beforeAll(async () => {
  db = await createTestDatabase();
  redis = createRedis(TEST_REDIS_URL, 'worker');
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.set(req.url ?? '', (received.get(req.url ?? '') ?? 0) + 1);
      res.end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  tasks = new TaskRepository(db.dataSource);
  owner = await fundedOwner(db.dataSource, 'owed-webhooks', 1_000_000n);
});

afterAll(async () => {
  await new Promise((r) => receiver.close(r));
  await redis.quit();
  await db.drop();
});

/** A task with a callback to `/<path>`, ended (completed or failed) and settled: its webhook is owed. */
async function settledTask(path: string, outcome: 'completed' | 'failed' = 'completed'): Promise<string> {
  const t = await tasks.createWithHold(testTask(owner, 100n, { callbackUrl: `${base}/${path}` }));
  if (outcome === 'completed') await tasks.complete(t.id, {});
  else await tasks.fail(t.id, { code: 'task_failed', message: 'x' });
  await settleTask(db.dataSource, t.id);
  return t.id;
}

const ageTask = (id: string, ms: number): Promise<unknown> =>
  db.dataSource.query(`UPDATE tasks SET completed_at = now() - ($2 || ' milliseconds')::interval WHERE id = $1`, [id, String(ms)]);

/** A billing sweep over the webhook queue only (no settlements here): a 10-minute look-back, a 3 h max age. */
const webhookSweeper = (queue: WebhookQueue): BillingSweeper =>
  new BillingSweeper(
    new TaskRepository(db.dataSource),
    new TaskRecoveryRepository(db.dataSource),
    undefined as never,
    {} as SettleTaskHandler,
    logger,
    30_000,
    { repo: new WebhookRepository(db.dataSource), queues: [queue], lookbackMs: 600_000, maxAgeMs: 3 * 3600_000 },
  );

describe('the billing sweep and owed webhooks', () => {
  let prefix: string;
  let webhooks: WebhookWorker | undefined;
  let billing: BillingWorker | undefined;
  let onEnd: (() => Promise<unknown>) | undefined;

  beforeEach(() => {
    prefix = uniqueRedisPrefix();
  });
  afterEach(async () => {
    await billing?.close(true);
    billing = undefined;
    await webhooks?.close(true);
    webhooks = undefined;
    await onEnd?.();
    onEnd = undefined;
    await deleteRedisPrefix(redis, prefix);
  });

  it('re-enqueues only owed deliveries whose job is gone: not a delivered one, a live or a finished job, one too recent or too old', async () => {
    // no worker consumes the queue here: the sweep's decisions are read from the jobs it leaves
    const queue = createWebhookQueue(redis, prefix, { attempts: 1, backoffMs: 10 });
    onEnd = () => queue.close();
    const lost = await settledTask('lost');
    const lostFailed = await settledTask('lost-failed', 'failed');
    const delivered = await settledTask('delivered');
    await new WebhookRepository(db.dataSource).recordAttempt({
      accountId: owner.accountId,
      taskId: delivered,
      event: 'completed',
      deliveryId: 'whd_x',
      attempt: 1,
      url: `${base}/delivered`,
      statusCode: 200,
      error: null,
      succeeded: true,
      durationMs: 1,
    });
    const live = await settledTask('live');
    await queue.add('deliver', { taskId: live, event: 'completed' }, { jobId: webhookJobId(live, 'completed'), delay: 60_000 });
    const recent = await settledTask('recent');
    const old = await settledTask('old');
    for (const id of [lost, lostFailed, delivered, live]) await ageTask(id, 60_000);
    await ageTask(old, 2 * 3600_000);

    const sweeper = webhookSweeper(queue);
    const presence = async (): Promise<Record<string, string>> => {
      const ids = { lost, lostFailed, delivered, live, recent, old };
      const events = { lost: 'completed', lostFailed: 'failed', delivered: 'completed', live: 'completed', recent: 'completed', old: 'completed' } as const;
      const p = await jobPresence(
        queue,
        Object.entries(ids).map(([k, id]) => webhookJobId(id, events[k as keyof typeof events])),
      );
      return Object.fromEntries(Object.keys(ids).map((k, i) => [k, p[i]!]));
    };

    expect((await sweeper.sweep()).webhooksResent).toBe(2);
    expect(await presence()).toEqual({ lost: 'live', lostFailed: 'live', delivered: 'missing', live: 'live', recent: 'missing', old: 'missing' });
    // jobId dedup: a second sweep finds every owed job present
    expect((await sweeper.sweep()).webhooksResent).toBe(0);
    // the rebuild after a Redis loss: however recent, back to the max age (the old one too)
    expect((await sweeper.sweep(0)).webhooksResent).toBe(2);
    expect(await presence()).toEqual({ lost: 'live', lostFailed: 'live', delivered: 'missing', live: 'live', recent: 'live', old: 'live' });
  });

  it('a delivery declined at the backlog cap longer ago than the look-back is still sent; the mark goes once a walk is through', async () => {
    const queue = createWebhookQueue(redis, prefix, { attempts: 1, backoffMs: 10 });
    onEnd = () => queue.close();
    const deferred = await settledTask('deferred');
    const unmarked = await settledTask('unmarked');
    // settlement asked for its delivery while the shard was at its cap (a gate of 0): declined, the shard marked
    expect(await enqueueWebhook(queue, { taskId: deferred, event: 'completed' }, new BacklogGate(0))).toBe(false);
    const marks = await webhookDeferrals([queue]);
    expect(marks).toHaveLength(1);
    // two hours later (the look-back is 10 minutes): the mark is as old as the decline
    await ageTask(deferred, 2 * 3600_000);
    await ageTask(unmarked, 2 * 3600_000);
    await redis.hset(webhookDeferredKey(queue.opts.prefix!), 'since', String(Date.now() - 2 * 3600_000 - 1000));
    const sweeper = webhookSweeper(queue);
    const presence = () => jobPresence(queue, [webhookJobId(deferred, 'completed'), webhookJobId(unmarked, 'completed')]);
    // the regular sweep reads back to the decline: both owed deliveries of that window are queued (the unmarked one
    // lost its job some other way; it is owed all the same; the other tests' owed tasks of the window too)
    expect((await sweeper.sweep()).webhooksResent).toBeGreaterThanOrEqual(2);
    expect(await presence()).toEqual(['live', 'live']);
    // the walk got through its window with no decline since: the mark is gone, the next sweep looks back 10 minutes
    expect(await webhookDeferrals([queue])).toEqual([]);
    await queue.obliterate({ force: true });
    await sweeper.sweep();
    expect(await presence()).toEqual(['missing', 'missing']);
  });

  it('a mark that moved after the sweep read it (another decline meanwhile) is not cleared with what the sweep read', async () => {
    const queue = createWebhookQueue(redis, prefix, { attempts: 1, backoffMs: 10 });
    onEnd = () => queue.close();
    expect(await enqueueWebhook(queue, { taskId: 'task_declined_a', event: 'completed' }, new BacklogGate(0))).toBe(false);
    const [read] = await webhookDeferrals([queue]);
    await waitFor(() => (Date.now() > Number(read!.last) ? true : undefined), { timeoutMs: 1000, intervalMs: 1, what: 'the clock to move' });
    expect(await enqueueWebhook(queue, { taskId: 'task_declined_b', event: 'completed' }, new BacklogGate(0))).toBe(false);
    expect(await clearWebhookDeferral(read!)).toBe(false);
    const [now] = await webhookDeferrals([queue]);
    expect(now).toMatchObject({ since: read!.since });
    expect(await clearWebhookDeferral(now!)).toBe(true);
    expect(await webhookDeferrals([queue])).toEqual([]);
  });

  it("after the webhook queue's keys are lost (its shard failed over empty), every owed webhook is delivered, once", async () => {
    const w = startWebhookWorker({ ds: db.dataSource, redis, prefix, logger }, LOOPBACK_WEBHOOKS);
    webhooks = w;
    // the webhook queue's consumer is stopped while its jobs are lost, as a shard that failed over empty would leave them
    await Promise.all(w.workers.map((x) => x.pause(true)));
    billing = await startBillingWorker(
      { ds: db.dataSource, redis, prefix, logger, webhooks: w.queues },
      { concurrency: 4, sweepIntervalMs: INTERVAL_MS, unsettledAfterMs: 60_000, webhookMaxAgeMs: 3600_000 },
    );
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await settledTask(`shard-loss-${i}`, i % 2 ? 'failed' : 'completed'));
    // their jobs as settlement enqueued them, then gone with the webhook queue's data (the billing queue keeps its own)
    for (const [i, id] of ids.entries())
      await w.queues[0]!.add('deliver', { taskId: id, event: i % 2 ? 'failed' : 'completed' }, { jobId: webhookJobId(id, i % 2 ? 'failed' : 'completed') });
    expect(await deleteRedisPrefix(redis, queueKeyPrefix(prefix, QUEUES.webhook))).toBeGreaterThan(0);
    w.workers.forEach((x) => x.resume());

    await waitFor(async () => ids.every((_, i) => received.get(`/shard-loss-${i}`) === 1) || undefined, {
      timeoutMs: 20 * INTERVAL_MS,
      intervalMs: 50,
      what: 'every owed webhook delivered after the loss',
    });
    // sweeps after the deliveries find every owed job present and enqueue nothing: nothing is sent twice
    for (let i = 0; i < 2; i++) expect((await billing.sweeper.sweep()).webhooksResent).toBe(0);
    expect((await billing.sweeper.sweep(0)).webhooksResent).toBe(0);
    expect(ids.map((_, i) => received.get(`/shard-loss-${i}`))).toEqual([1, 1, 1, 1, 1]);
  });
});
