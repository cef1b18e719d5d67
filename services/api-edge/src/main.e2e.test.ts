import { spawn } from 'node:child_process';
import path from 'node:path';
import { toMinor } from '@gmg/contracts';
import { AccountRepository, ApiKeyRepository, PriceRepository } from '@gmg/db';
import { createRedis, createTaskQueue, shardOf, type Redis } from '@gmg/queue';
import {
  REPO_ROOT,
  TEST_REDIS_TARGET,
  TEST_REDIS_URL,
  createTestDatabase,
  deleteRedisPrefix,
  freePort,
  startService,
  uniqueRedisPrefix,
  type ServiceProcess,
  type TestDatabase,
} from '@gmg/testing';

/** api-edge as a real process (main.ts under tsx): env parsing, wiring, listening, SIGTERM drain. */
describe('api-edge process', () => {
  let db: TestDatabase;
  let redis: Redis;
  let svc: ServiceProcess | undefined;
  const prefix = uniqueRedisPrefix();

  beforeAll(async () => {
    db = await createTestDatabase('gmg_edge_e2e');
    redis = createRedis(TEST_REDIS_TARGET, 'client');
  });
  afterAll(async () => {
    await svc?.kill9();
    await deleteRedisPrefix(redis, prefix);
    await redis.quit();
    await db.drop();
  });

  it('refuses to start without ADMIN_TOKEN: exit code 1 and the key named on stderr', async () => {
    const tsx = path.join(REPO_ROOT, 'node_modules/.bin/tsx');
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(await freePort()), DATABASE_URL: db.url, LOG_LEVEL: 'warn' };
    delete env.ADMIN_TOKEN;
    const proc = spawn(tsx, [path.join(REPO_ROOT, 'services/api-edge/src/main.ts')], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
    expect(code).toBe(1);
    expect(stderr).toMatch(/ADMIN_TOKEN/);
  });

  it('starts, accepts a paid submission into the real queue, and exits 0 on SIGTERM', async () => {
    await new PriceRepository(db.dataSource).upsertMany([{ key: 'lumen-2-flex', unitPrice: toMinor(0.02), description: 'e2e' }]);
    const account = await new AccountRepository(db.dataSource).create({ name: 'e2e' });
    await new AccountRepository(db.dataSource).topup(account.id, toMinor(1));
    const { secret } = await new ApiKeyRepository(db.dataSource).create({ accountId: account.id });
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    svc = await startService(
      'api-edge',
      { PORT: String(port), ADMIN_TOKEN: 'e2e-admin-token-0123456789abcdef', DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix },
      `${base}/readyz`,
    );

    const res = await fetch(`${base}/v1/images/generations`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'lumen-2-flex', prompt: 'a kite' }),
    });
    expect(res.status).toBe(200);
    const ack = (await res.json()) as { data: Array<{ task_id: string }> };
    const id = ack.data[0].task_id;
    const queue = createTaskQueue('image', redis, prefix, shardOf(id, 1));
    try {
      expect((await queue.getJob(id))?.data).toMatchObject({ taskId: id, submitAttempts: 0 });
    } finally {
      await queue.close();
    }
    const poll = await fetch(`${base}/v1/tasks/${id}`, { headers: { Authorization: `Bearer ${secret}` } });
    expect(((await poll.json()) as { data: { status: string } }).data.status).toBe('pending');

    expect(await svc.stop(15_000)).toBe(0);
    svc = undefined;
  });
});
