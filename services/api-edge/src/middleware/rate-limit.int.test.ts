import express, { type RequestHandler } from 'express';
import request from 'supertest';
import { AccountRepository, ApiKeyRepository, TaskRepository } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createRedis, limiterKey, redisPrimaries, type Redis } from '@gmg/queue';
import {
  TEST_REDIS_URL,
  createTestDatabase,
  freePort,
  recordCalls,
  testPrincipal,
  testTask,
  uniqueRedisPrefix,
  uniqueSuffix,
  waitFor,
  type TestDatabase,
} from '@gmg/testing';
import { errorHandler } from '../http/error-handler';
import { setPrincipal } from '../http/principal';
import { createRateLimitMiddleware } from './rate-limit';
import { MAX_BATCH, RpsLeaseLimiter, type RpsAnswer } from './rps-lease';

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

  const client = () => {
    const r = createRedis(TEST_REDIS_URL);
    redisClients.push(r);
    return r;
  };
  const readyClient = async () => {
    const r = client();
    await waitFor(() => r.status === 'ready', { what: 'a Redis connection', intervalMs: 10 });
    return r;
  };
  /** The window's counter of `keyId` (0 once it expired): rate-limiter-flexible's key `<prefix>:rps:{<id>}`. */
  const counterOf = async (prefix: string, keyId: string) => Number((await redisClients[0]!.get(`${prefix}:rps:${limiterKey(keyId)}`)) ?? 0);

  /**
   * Runs `burst` on a new key id until it ran within one window of that key: the counter in Redis afterwards holds
   * at least what was admitted (a window that turned mid-burst leaves a new, smaller counter, or none). A burst
   * takes milliseconds, a window a second: a retry means the machine stalled; at most 3 tries.
   */
  const inOneWindow = async <T extends { admitted: number }>(
    prefix: string,
    burst: (keyId: string) => Promise<T>,
  ): Promise<T & { keyId: string; counter: number }> => {
    for (let i = 0; i < 3; i++) {
      const keyId = `k-${uniqueSuffix()}`;
      const r = await burst(keyId);
      const counter = await counterOf(prefix, keyId);
      if (counter >= r.admitted) return { ...r, keyId, counter };
    }
    throw new Error('every burst straddled a window boundary');
  };

  /** Commands (EVAL/EVALSHA) naming `key` that Redis received, seen on a MONITOR connection. */
  const monitorCommands = async (key: string) => {
    const monitor = await redisPrimaries(client())[0]!.monitor();
    const seen: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args.includes(key) || args[0]?.toLowerCase() === 'echo') seen.push(args);
    });
    return {
      /** How many, once Redis ran every command `via` sent before: an ECHO sent after them has been seen. */
      count: async (via: Redis) => {
        const mark = `mark-${uniqueSuffix()}`;
        await via.echo(mark);
        await waitFor(() => seen.some((a) => a.includes(mark)), { what: 'the monitor to see the mark', intervalMs: 10 });
        return seen.filter((a) => /^eval(sha)?$/i.test(a[0] ?? '') && a.includes(key)).length;
      },
      close: () => monitor.disconnect(),
    };
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

  it('at a low limit counts every request in Redis as it comes: 5 pass (Remaining 4 … 0), the 6th and 7th get 429 with the headers of before', async () => {
    const prefix = newPrefix();
    const app = await replica(prefix);
    const r = await inOneWindow(prefix, async (keyId) => {
      const rs: request.Response[] = [];
      for (let i = 0; i < 7; i++) rs.push(await request(app).get('/v1/ping').set('x-test-key', keyId).set('x-test-rps', '5'));
      return { rs, admitted: rs.filter((x) => x.status === 200).length };
    });
    expect(r.rs.map((x) => x.status)).toEqual([200, 200, 200, 200, 200, 429, 429]);
    expect(r.rs.map((x) => x.headers['x-ratelimit-remaining'])).toEqual(['4', '3', '2', '1', '0', '0', '0']);
    for (const limited of r.rs.slice(5)) {
      expect(limited.headers['x-ratelimit-limit']).toBe('5');
      expect(limited.headers['retry-after']).toBe('1');
      expect(limited.body).toEqual({
        error: { code: 429, type: 'rate_limit_error', message: 'Rate limit exceeded: at most 5 requests per second for this key' },
      });
    }
    // one INCR per admitted request, one for the first refusal (as the library counted it); the 7th was refused by
    // this process, which knew the window full
    expect(r.counter).toBe(6);
  });

  it('keeps b = 1 at the default 20 per second however hot the key: each admitted request is in the Redis counter when admitted', async () => {
    const prefix = newPrefix();
    const lease = new RpsLeaseLimiter({ redis: await readyClient(), keyPrefix: `${prefix}:rps` });
    const r = await inOneWindow(prefix, async (keyId) => {
      const key = limiterKey(keyId);
      const counts: number[] = [];
      let leased = 0;
      for (let i = 0; i < 40; i++) {
        if ((await lease.take(key, 20))?.allowed) {
          counts.push(await counterOf(prefix, keyId));
          leased += lease.leased(key);
        }
      }
      return { admitted: counts.length, counts, leased, b: lease.batchSize(key, 20) };
    });
    expect(r.counts).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(r.leased).toBe(0);
    expect(r.b).toBe(1);
  });

  it('single flight: 50 concurrent requests of a new key make 2 Redis commands (one for the first, one for all that waited on it)', async () => {
    const prefix = newPrefix();
    const recorded = recordCalls(await readyClient());
    const lease = new RpsLeaseLimiter({ redis: recorded.proxy, keyPrefix: `${prefix}:rps` });
    recorded.calls.length = 0;
    const taken = Array.from({ length: 50 }, () => lease.take(limiterKey('burst'), 2000));
    expect(taken.every((t) => t instanceof Promise)).toBe(true); // none had a leased token: all waited on a fetch
    const answers = await Promise.all(taken.map((t) => Promise.resolve(t)));
    expect(answers.every((a) => a?.allowed)).toBe(true);
    expect(recorded.calls).toEqual(['gmgRpsLease', 'gmgRpsLease']);
  });

  it('two replicas at 2,000 per second, 800 + 1,600 requests in one window: admitted ≤ 2,000, ≥ 2,000 − 2 × (2,000/20 − 1), and the rest is what the replicas still hold', async () => {
    const prefix = newPrefix();
    const limit = 2000;
    const replicas = [
      new RpsLeaseLimiter({ redis: await readyClient(), keyPrefix: `${prefix}:rps` }),
      new RpsLeaseLimiter({ redis: await readyClient(), keyPrefix: `${prefix}:rps` }),
    ];
    const r = await inOneWindow(prefix, async (keyId) => {
      const key = limiterKey(keyId);
      const answers: RpsAnswer[] = [];
      const perReplica = [0, 0];
      // 800 requests to one replica, 1,600 to the other, 4 at a time each (each of its 4 clients waits for an answer
      // before its next request): the first may stop with spare tokens while the other is refused
      await Promise.all(
        replicas.flatMap((l, n) =>
          Array.from({ length: 4 }, async () => {
            for (let i = 0; i < (n + 1) * 200; i++) {
              const a = await l.take(key, limit);
              answers.push(a);
              if (a?.allowed) perReplica[n]!++;
            }
          }),
        ),
      );
      return { admitted: answers.filter((a) => a?.allowed).length, answers, perReplica, held: replicas.map((l) => l.leased(key)) };
    });
    expect(r.answers).toHaveLength(2400);
    expect(r.answers.every((a) => a !== null)).toBe(true);
    expect(r.admitted).toBeLessThanOrEqual(limit);
    expect(r.admitted).toBeGreaterThanOrEqual(limit - 2 * (Math.min(limit / 20, MAX_BATCH) - 1));
    expect(r.perReplica.every((n) => n > 0)).toBe(true);
    // every token granted in the window was either used or is still held by a replica (at most b − 1 each)
    expect(r.admitted + r.held[0]! + r.held[1]!).toBe(limit);
    expect(Math.max(...r.held)).toBeLessThanOrEqual(limit / 20 - 1);
  });

  it('a hot key at a high limit: 300 requests make far fewer than 300 Redis commands (counted on a MONITOR connection)', async () => {
    const prefix = newPrefix();
    const redis = createRedis(TEST_REDIS_URL);
    const app = await replica(prefix, redis);
    const keyId = `hot-${uniqueSuffix()}`;
    const monitor = await monitorCommands(`${prefix}:rps:${limiterKey(keyId)}`);
    const statuses: number[] = [];
    for (let i = 0; i < 300; i++) statuses.push((await request(app).get('/v1/ping').set('x-test-key', keyId).set('x-test-rps', '2000')).status);
    const commands = await monitor.count(redis);
    monitor.close();
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(commands).toBeGreaterThan(0);
    expect(commands).toBeLessThan(300 / 4);
  });

  it('does not use tokens leased in a window that ended: the next request is counted in the new window', async () => {
    const prefix = newPrefix();
    const redis = await readyClient();
    const recorded = recordCalls(redis);
    const lease = new RpsLeaseLimiter({ redis: recorded.proxy, keyPrefix: `${prefix}:rps` });
    const keyId = `w-${uniqueSuffix()}`;
    const key = limiterKey(keyId);
    const limit = 2000;
    for (let i = 0; i < 400 && !(i >= 100 && lease.leased(key) > 0); i++) expect((await lease.take(key, limit))?.allowed).toBe(true);
    const held = lease.leased(key);
    expect(held).toBeGreaterThan(0);
    await waitFor(async () => (await redis.pttl(`${prefix}:rps:${key}`)) === -2, { what: 'the window to end', intervalMs: 20 });
    expect(lease.leased(key)).toBe(held); // still held locally: only their window's end makes them unusable
    const fetches = recorded.calls.filter((c) => c === 'gmgRpsLease').length;
    const answer = await lease.take(key, limit);
    expect(recorded.calls.filter((c) => c === 'gmgRpsLease').length).toBe(fetches + 1);
    const counter = await counterOf(prefix, keyId);
    expect(counter).toBeGreaterThanOrEqual(1);
    // by the new window: limit − its count + the tokens leased in it and not used
    expect(answer).toMatchObject({ allowed: true, remaining: limit - 1 });
    expect(lease.leased(key)).toBe(counter - 1);
  });

  it('keeps local state for at most maxKeys keys (idle ones dropped first)', async () => {
    const prefix = newPrefix();
    const lease = new RpsLeaseLimiter({ redis: await readyClient(), keyPrefix: `${prefix}:rps`, maxKeys: 10 });
    const sizes: number[] = [];
    for (let i = 0; i < 50; i++) {
      expect((await lease.take(limiterKey(`many-${i}`), 5))?.allowed).toBe(true);
      sizes.push(lease.size);
    }
    expect(Math.max(...sizes)).toBeLessThanOrEqual(10);
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
