import { resolveModel, validateRequest } from '@gmg/contracts';
import { AccountRepository, ApiKeyRepository, ChannelRepository, TaskRepository, newTaskId, type TaskRecord } from '@gmg/db';
import { Producers, createRedis, type Redis } from '@gmg/queue';
import { TaskViewStore } from '@gmg/tasks';
import {
  createTestDatabase,
  freePort,
  startService,
  uniqueRedisPrefix,
  waitFor,
  TEST_REDIS_TARGET,
  TEST_REDIS_URL,
  type ServiceProcess,
  type TestDatabase,
  deleteRedisPrefix,
} from '@gmg/testing';

/**
 * The real processes: upstream-sim, billing and worker-image. The worker is killed with SIGKILL while tasks are in
 * flight; a new worker process takes them over (delayed jobs at once, active ones after their lock expires) and
 * every task completes and is captured exactly once.
 */
const MODEL = 'lumen-2-flex';
const PRICE = 5000n;
const START = 1_000_000n;

let db: TestDatabase;
let redis: Redis;
let prefix: string;
let producers: Producers;
const procs: ServiceProcess[] = [];
let simUrl: string;
let workerEnv: Record<string, string>;
let workerPort: number;

beforeAll(async () => {
  db = await createTestDatabase();
  prefix = uniqueRedisPrefix();
  redis = createRedis(TEST_REDIS_TARGET, 'producer');
  producers = new Producers(redis, prefix);
  const simPort = await freePort();
  simUrl = `http://127.0.0.1:${simPort}`;
  const common = { DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix, SWEEP_INTERVAL_MS: '1000' };
  procs.push(await startService('upstream-sim', { PORT: String(simPort), SIM_TIME_SCALE: '2', SIM_API_KEY: 'sk-sim-e2e-secret' }, `${simUrl}/healthz`));
  const billingPort = await freePort();
  procs.push(
    await startService('billing', { ...common, HEALTH_PORT: String(billingPort), UNSETTLED_AFTER_MS: '1000' }, `http://127.0.0.1:${billingPort}/readyz`),
  );
  workerEnv = { ...common, POLL_INTERVAL_SCALE: '0.1', WORKER_LOCK_MS: '1000', WORKER_CONCURRENCY: '4' };
});

afterAll(async () => {
  for (const p of procs.reverse()) await p.kill9();
  await producers.close();
  await deleteRedisPrefix(redis, prefix);
  await redis.quit();
  await db.drop();
});

async function startWorker(): Promise<ServiceProcess> {
  workerPort = await freePort();
  // started once ready: the health server answers /healthz before the worker's start-up is done (issue 38)
  const p = await startService('worker-image', { ...workerEnv, HEALTH_PORT: String(workerPort) }, `http://127.0.0.1:${workerPort}/readyz`);
  procs.push(p);
  return p;
}

// kill -9 with work in flight is proven in test/e2e/spine.e2e.test.ts (balances included); this file proves the
// graceful path: SIGTERM with tasks in flight exits 0, and a replacement worker finishes every task exactly once.
it('drains on SIGTERM with tasks in flight (exit 0), and a replacement worker finishes and captures every task once', async () => {
  const ds = db.dataSource;
  const accounts = new AccountRepository(ds);
  const account = await accounts.create({ name: 'e2e' });
  await accounts.topup(account.id, START);
  const { key } = await new ApiKeyRepository(ds).create({ accountId: account.id });
  await new ChannelRepository(ds).create({ name: 'sim', baseUrl: simUrl, apiKey: 'sk-sim-e2e-secret' });
  const tasks = new TaskRepository(ds);
  const newTask = async (prompt: string): Promise<TaskRecord> => {
    const v = validateRequest(resolveModel(MODEL)!, { model: MODEL, prompt }, MODEL);
    if (!v.ok) throw new Error(v.violation.message);
    const t = await tasks.createWithHold({
      id: newTaskId(),
      accountId: account.id,
      apiKeyId: key.id,
      model: MODEL,
      requestedModel: MODEL,
      pool: 'image',
      request: v.value,
      price: PRICE,
      priceSnapshot: {},
      deadlineAt: new Date(Date.now() + 120_000),
    });
    await producers.enqueueTask('image', t.id);
    return t;
  };

  const first = await startWorker();
  const ready = await fetch(`http://127.0.0.1:${workerPort}/readyz`);
  expect(ready.status).toBe(200);
  expect(await ready.json()).toMatchObject({ status: 'ready', checks: { postgres: 'ok', redis: 'ok' } });

  const list = await Promise.all([1, 2, 3, 4, 5].map((i) => newTask(`a lighthouse ${i}`)));
  await waitFor(
    async () => {
      const rows = await Promise.all(list.map((t) => tasks.get(t.id)));
      return rows.every((r) => r?.status === 'processing' && r.upstreamTaskId);
    },
    { timeoutMs: 30_000, what: 'all tasks submitted upstream' },
  );
  const drained = await first.stop();
  expect({ code: drained, output: drained === 0 ? '' : first.output() }).toEqual({ code: 0, output: '' });

  // Submitted while no worker runs: waits in the queue.
  list.push(await newTask('a harbour after the crash'));
  const second = await startWorker();

  const ends = await waitFor(
    async () => {
      const rows = await Promise.all(list.map((t) => tasks.get(t.id)));
      return rows.every((r) => r?.status === 'completed') ? rows : undefined;
    },
    { timeoutMs: 60_000, what: 'every task completed' },
  );
  expect(ends.map((r) => r?.result?.images?.length)).toEqual(list.map(() => 1));

  await waitFor(
    async () => {
      const rows: Array<{ n: number }> = await ds.query(`SELECT count(*)::int AS n FROM ledger_entries WHERE kind = 'capture' AND account_id = $1`, [
        account.id,
      ]);
      return rows[0].n === list.length;
    },
    { timeoutMs: 30_000, what: 'every task captured' },
  );
  const a = (await accounts.get(account.id))!;
  expect([a.available, a.held, a.spent]).toEqual([START - PRICE * BigInt(list.length), 0n, PRICE * BigInt(list.length)]);
  const view = await new TaskViewStore(redis, prefix).read(list[0].id);
  expect(view?.task).toMatchObject({ status: 'completed', progress: 100 });

  await second.stop();
});
