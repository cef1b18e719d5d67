import http, { type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WEBHOOK_HEADERS, verifyWebhook } from '@gmg/contracts';
import { TaskRepository, WebhookRepository, settleTask } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createRedis, enqueueSettlement, type Redis } from '@gmg/queue';
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
import { startBillingWorker, type BillingWorker } from '../billing-worker';
import { LOOPBACK_WEBHOOKS } from '../loopback-webhooks.test-kit';
import { startWebhookWorker, type WebhookWorker } from './webhook-worker';

const logger = createLogger({ service: 'test', level: 'silent' });

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

let db: TestDatabase;
let redis: Redis;
let prefix: string;
let webhooks: WebhookWorker;
let billing: BillingWorker;
let receiver: Server;
let base: string;
const received: Received[] = [];
/** Per path: how many requests answer 500 before one answers 200. */
const failuresLeft = new Map<string, number>();

beforeAll(async () => {
  db = await createTestDatabase();
  redis = createRedis(TEST_REDIS_URL, 'worker');
  prefix = uniqueRedisPrefix();
  webhooks = startWebhookWorker({ ds: db.dataSource, redis, prefix, logger }, LOOPBACK_WEBHOOKS);
  billing = await startBillingWorker({ ds: db.dataSource, redis, prefix, logger, webhooks: webhooks.queues }, { concurrency: 4, sweepIntervalMs: 0 });
  receiver = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body });
      const left = failuresLeft.get(req.url ?? '') ?? 0;
      failuresLeft.set(req.url ?? '', left - 1);
      res.statusCode = left > 0 ? 500 : 200;
      res.end(left > 0 ? 'try later' : 'ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await billing?.close(true);
  await webhooks?.close(true);
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
  await deleteRedisPrefix(redis, prefix);
  await redis?.quit();
  await db?.drop();
});

async function customer(): Promise<TestOwner & { secret: string }> {
  const owner = await fundedOwner(db.dataSource, 'webhook-test', 1_000_000n);
  const { secret } = await new WebhookRepository(db.dataSource).secretOf(owner.accountId);
  return { ...owner, secret };
}

async function taskWithCallback(c: TestOwner, path: string): Promise<string> {
  return (await new TaskRepository(db.dataSource).createWithHold(testTask(c, 500n, { callbackUrl: `${base}${path}` }))).id;
}

const deliveriesTo = (path: string) => received.filter((r) => r.path === path);
const header = (r: Received, name: string) => String(r.headers[name.toLowerCase()]);
const verified = (r: Received, secret: string) =>
  verifyWebhook(secret, Number(header(r, WEBHOOK_HEADERS.timestamp)), r.body, header(r, WEBHOOK_HEADERS.signature), Math.floor(Date.now() / 1000));

describe('signed webhooks through the billing process', () => {
  it('delivers a completed task once, signed with the account secret, after its settlement', async () => {
    const c = await customer();
    const id = await taskWithCallback(c, '/completed');
    await new TaskRepository(db.dataSource).complete(id, { images: [{ url: 'http://sim/1.png' }] });
    await enqueueSettlement(billing.queues, id);
    const [r] = await waitFor(async () => (deliveriesTo('/completed').length ? deliveriesTo('/completed') : undefined), {
      timeoutMs: 10_000,
      what: 'completed webhook',
    });
    expect(verified(r, c.secret)).toBe(true);
    expect(verified(r, 'whsec_another')).toBe(false);
    expect(verified({ ...r, body: r.body.replace('completed', 'failed') }, c.secret)).toBe(false);
    expect(JSON.parse(r.body)).toEqual({
      code: 200,
      data: expect.objectContaining({ id, status: 'completed', progress: 100, result: { images: [{ url: 'http://sim/1.png' }] } }),
    });
    expect(header(r, WEBHOOK_HEADERS.deliveryId)).toBe(`whd_webhook-${id}-completed`);
    expect(header(r, 'content-type')).toContain('application/json');
    // A settlement delivered again (the settle job's retry) enqueues nothing new: still one request.
    await billing.settler.settle(id);
    const log = await waitFor(
      async () => {
        const rows = await new WebhookRepository(db.dataSource).listDeliveries(c.accountId, { limit: 10 });
        return rows.length ? rows : undefined;
      },
      { timeoutMs: 5000, what: 'delivery recorded' },
    );
    expect(log).toEqual([expect.objectContaining({ taskId: id, event: 'completed', attempt: 1, statusCode: 200, succeeded: true, error: null })]);
    expect(deliveriesTo('/completed')).toHaveLength(1);
  });

  it('delivers a failed (cancelled) task with its error', async () => {
    const c = await customer();
    const id = await taskWithCallback(c, '/failed');
    const out = await new TaskRepository(db.dataSource).cancel(id, c.accountId, { code: 'task_failed', message: 'Task cancelled', type: 'cancelled' });
    expect(out.outcome).toBe('cancelled');
    await enqueueSettlement(billing.queues, id);
    const [r] = await waitFor(async () => (deliveriesTo('/failed').length ? deliveriesTo('/failed') : undefined), {
      timeoutMs: 10_000,
      what: 'failed webhook',
    });
    expect(verified(r, c.secret)).toBe(true);
    expect(JSON.parse(r.body).data).toMatchObject({ id, status: 'failed', cost: 0, error: { type: 'cancelled', message: 'Task cancelled' } });
  });

  it('retries a receiver that answers 500 twice: the third attempt is delivered, every attempt recorded', async () => {
    const c = await customer();
    failuresLeft.set('/flaky', 2);
    const id = await taskWithCallback(c, '/flaky');
    await new TaskRepository(db.dataSource).complete(id, { images: [{ url: 'http://sim/2.png' }] });
    await enqueueSettlement(billing.queues, id);
    const log = await waitFor(
      async () => {
        const rows = await new WebhookRepository(db.dataSource).listDeliveries(c.accountId, { limit: 10 });
        return rows.some((d) => d.succeeded) ? rows : undefined;
      },
      { timeoutMs: 15_000, what: 'flaky webhook delivered' },
    );
    expect(log.map((d) => [d.attempt, d.statusCode, d.succeeded])).toEqual([
      [3, 200, true],
      [2, 500, false],
      [1, 500, false],
    ]);
    const reqs = deliveriesTo('/flaky');
    expect(reqs.map((r) => header(r, WEBHOOK_HEADERS.attempt))).toEqual(['1', '2', '3']);
    expect(new Set(reqs.map((r) => header(r, WEBHOOK_HEADERS.deliveryId))).size).toBe(1);
    expect(reqs.every((r) => verified(r, c.secret))).toBe(true);
  });

  it('a crash between the settlement commit and the webhook enqueue loses nothing: the settle retry enqueues it', async () => {
    const c = await customer();
    const id = await taskWithCallback(c, '/after-crash');
    await new TaskRepository(db.dataSource).complete(id, { images: [{ url: 'http://sim/3.png' }] });
    // The settlement committed, then the process died before enqueueing the webhook:
    expect(await settleTask(db.dataSource, id)).toBe('captured');
    expect(await webhooks.queues[0]!.getJob(`webhook-${id}-completed`)).toBeUndefined();
    // The settle job was never completed, so BullMQ (or the billing sweeper) runs it again: a duplicate settlement.
    await enqueueSettlement(billing.queues, id);
    const [r] = await waitFor(async () => (deliveriesTo('/after-crash').length ? deliveriesTo('/after-crash') : undefined), {
      timeoutMs: 10_000,
      what: 'webhook after the retry',
    });
    expect(verified(r, c.secret)).toBe(true);
    const spent = await db.dataSource.query(`SELECT count(*)::int AS n FROM ledger_entries WHERE task_id = $1 AND kind = 'capture'`, [id]);
    expect(spent[0].n).toBe(1);
  });

  it('sends nothing for a task without a callback_url', async () => {
    const c = await customer();
    const t = await new TaskRepository(db.dataSource).createWithHold(testTask(c, 500n));
    await new TaskRepository(db.dataSource).fail(t.id, { code: 'task_failed', message: 'x' });
    expect(await billing.settler.settle(t.id)).toBe('released');
    expect(await webhooks.queues[0]!.getJob(`webhook-${t.id}-failed`)).toBeUndefined();
  });
});
