import express, { type RequestHandler } from 'express';
import request from 'supertest';
import { AccountRepository, ApiKeyRepository, TaskRepository } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createRedis, type Redis } from '@gmg/queue';
import { TEST_REDIS_URL, createTestDatabase, freePort, recordCalls, testPrincipal, testTask, uniqueRedisPrefix, type TestDatabase } from '@gmg/testing';
import { errorHandler } from '../http/error-handler';
import { setPrincipal } from '../http/principal';
import { createRateLimitMiddleware } from './rate-limit';

const principal = (keyId: string, rpsLimit: number | null, inflightLimit: number | null = null) =>
  testPrincipal({ keyId, accountId: 'acc', rpsLimit, inflightLimit });

describe('rate limits (real Redis and Postgres)', () => {
  const redisClients: Redis[] = [];
  const prefixes: string[] = [];
  const logger = createLogger({ service: 'test', level: 'silent' });

  /**
   * One "replica": its own Redis connection (used once ready, as main.ts does; before that the limiter counts in
   * memory), the shared prefix; the principal comes from test headers.
   */
  const replica = async (prefix: string, redis: Redis = createRedis(TEST_REDIS_URL)) => {
    redisClients.push(redis);
    if (redis.status !== 'end') await redis.ping().catch(() => undefined);
    const app = express();
    const fakeAuth: RequestHandler = (req, res, next) => {
      const limit = req.get('x-test-rps');
      setPrincipal(res, principal(req.get('x-test-key') ?? 'k', limit === undefined || limit === 'none' ? null : Number(limit)));
      next();
    };
    app.get('/v1/ping', fakeAuth, createRateLimitMiddleware({ redis, prefix }), (_req, res) => {
      res.json({ ok: true });
    });
    app.use(errorHandler(logger));
    return app;
  };
  const newPrefix = () => {
    const p = uniqueRedisPrefix();
    prefixes.push(p);
    return p;
  };

  afterAll(async () => {
    const r = redisClients[0];
    for (const p of prefixes) {
      const keys = r ? await r.keys(`${p}:*`) : [];
      if (keys.length) await r.del(...keys);
    }
    await Promise.all(redisClients.map((c) => (c.status === 'ready' ? c.quit() : Promise.resolve(c.disconnect()))));
  });

  it('with a limit of 5 per second answers the 6th request within the second with 429 and Retry-After', async () => {
    const app = await replica(newPrefix());
    const results = await Promise.all(Array.from({ length: 6 }, () => request(app).get('/v1/ping').set('x-test-rps', '5')));
    const limited = results.filter((r) => r.status === 429);
    expect(results.filter((r) => r.status === 200)).toHaveLength(5);
    expect(limited).toHaveLength(1);
    expect(Number(limited[0].headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited[0].body.error).toMatchObject({ code: 429, type: 'rate_limit_error' });
  });

  it('shares the count across replicas through Redis', async () => {
    const prefix = newPrefix();
    const [a, b] = [await replica(prefix), await replica(prefix)];
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        request(i % 2 ? a : b)
          .get('/v1/ping')
          .set('x-test-key', 'shared')
          .set('x-test-rps', '4'),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(4);
    expect(results.filter((r) => r.status === 429)).toHaveLength(4);
  });

  it('counts each key separately and never limits a key without a limit', async () => {
    const app = await replica(newPrefix());
    const limited = await Promise.all(Array.from({ length: 3 }, () => request(app).get('/v1/ping').set('x-test-key', 'one').set('x-test-rps', '2')));
    const other = await request(app).get('/v1/ping').set('x-test-key', 'two').set('x-test-rps', '2');
    const free = await Promise.all(Array.from({ length: 30 }, () => request(app).get('/v1/ping').set('x-test-key', 'free').set('x-test-rps', 'none')));
    expect(limited.map((r) => r.status).sort()).toEqual([200, 200, 429]);
    expect(other.status).toBe(200);
    expect(free.every((r) => r.status === 200)).toBe(true);
  });

  it('with Redis unreachable keeps limiting, counting per replica in memory, and answers at once (docs/rate-limits.md)', async () => {
    // Redis is down: the client keeps reconnecting and queues what it is given meanwhile (the 'client' role: offline
    // queue on, two reconnections per command; main.ts's 'producer' client would fail it at once instead)
    const down = createRedis(`redis://127.0.0.1:${await freePort()}`, 'client');
    down.on('error', () => undefined);
    const dead = recordCalls(down);
    const app = await replica(newPrefix(), dead.proxy);
    expect(dead.proxy.status).not.toBe('ready');
    dead.calls.length = 0; // the replica's set-up (ping, the limiter's defineCommand) is not a request's
    const results = await Promise.all(Array.from({ length: 5 }, () => request(app).get('/v1/ping').set('x-test-key', 'down').set('x-test-rps', '3')));
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 429, 429]);
    expect(results.find((r) => r.status === 429)?.headers['retry-after']).toBe('1');
    const free = await request(app).get('/v1/ping').set('x-test-key', 'down-free').set('x-test-rps', 'none');
    expect(free.status).toBe(200);
    // at once: no request gave the dead client a command (it would have waited for its reconnections), so the
    // answers above are the in-memory count of this replica
    expect(dead.calls).toEqual([]);
  });

  describe('in-flight task limit', () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase();
    });
    afterAll(async () => {
      await db?.drop();
    });

    it('the hold statement refuses with rate_limited once the key has inflightLimit unfinished tasks (nothing held), and allows again when one ends', async () => {
      const ds = db.dataSource;
      const accounts = new AccountRepository(ds);
      const account = await accounts.create({ name: 'inflight' });
      await accounts.topup(account.id, 1000n);
      const { key } = await new ApiKeyRepository(ds).create({ accountId: account.id });
      const tasks = new TaskRepository(ds);
      const submit = (inflightLimit: number | null) => tasks.createWithHold(testTask({ accountId: account.id, apiKeyId: key.id }, 1n, { inflightLimit }));
      const first = await submit(2);
      await submit(2);
      await expect(submit(2)).rejects.toMatchObject({ code: 'rate_limited', details: { retryAfter: 5, inflightLimit: 2 } });
      // refused before the hold: nothing held, no third task
      expect(await accounts.get(account.id)).toMatchObject({ available: 998n, held: 2n });
      expect((await ds.query(`SELECT count(*)::int AS n FROM tasks WHERE api_key_id = $1`, [key.id]))[0].n).toBe(2);
      // a key without a limit is never refused for it
      await expect(submit(null)).resolves.toMatchObject({ status: 'pending' });
      await tasks.fail(first.id, { code: 'task_failed', message: 'x' });
      await expect(submit(3)).resolves.toMatchObject({ status: 'pending' });
      await expect(submit(3)).rejects.toMatchObject({ code: 'rate_limited' });
      // an empty account still gets payment_required, not rate_limited, when there is room
      const poor = await accounts.create({ name: 'poor' });
      const poorKey = (await new ApiKeyRepository(ds).create({ accountId: poor.id })).key;
      await expect(tasks.createWithHold(testTask({ accountId: poor.id, apiKeyId: poorKey.id }, 1n, { inflightLimit: 5 }))).rejects.toMatchObject({
        code: 'payment_required',
      });
    });
  });
});
