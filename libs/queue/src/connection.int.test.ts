/**
 * Every connection createRedis makes is bounded (issue 38): a Redis that stops answering — packets dropped, the
 * connection still open — fails a command within the command timeout instead of hanging it.
 */
import type IORedis from 'ioredis';
import { REDIS_LIMIT_DEFAULTS } from '@gmg/config';
import { startBlackHoleProxy, startLocalRedis, type BlackHoleProxy, type LocalRedis } from '@gmg/testing';
import { WORKER_MIN_COMMAND_TIMEOUT_MS, createRedis, redisReady, type Redis } from './connection';

let server: LocalRedis;
let proxy: BlackHoleProxy;
const clients: Redis[] = [];

beforeAll(async () => {
  server = await startLocalRedis();
});
afterAll(async () => {
  await server.stop();
});
beforeEach(async () => {
  proxy = await startBlackHoleProxy({ port: server.port });
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.disconnect();
  await proxy.close();
});

const connect = (role: 'producer' | 'worker', commandTimeoutMs: number): Redis => {
  const c = createRedis({ kind: 'standalone', url: proxy.url, limits: { ...REDIS_LIMIT_DEFAULTS, commandTimeoutMs } }, role);
  clients.push(c);
  return c;
};

describe('createRedis bounds (issue 38)', () => {
  it('a request-path connection fails a command within its timeout once Redis is black-holed, and works again after', async () => {
    const redis = connect('producer', 300);
    await redisReady(redis);
    expect(await redis.set('k', 'v')).toBe('OK');
    proxy.blackHole();
    const started = Date.now();
    await expect(redis.get('k')).rejects.toThrow('Command timed out');
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(250);
    expect(waited).toBeLessThan(300 + 1500);
    expect(redis.status).toBe('ready'); // nothing told the client: only the timeout noticed
    proxy.restore();
    expect(await redis.set('k', 'w')).toBe('OK');
    expect(await redis.get('k')).toBe('w');
  });

  it('worker connections keep BullMQ’s requirements: retries without limit, a timeout above its longest blocking wait', () => {
    const redis = connect('worker', 300) as IORedis;
    expect(redis.options.maxRetriesPerRequest).toBeNull();
    expect(redis.options.commandTimeout).toBe(WORKER_MIN_COMMAND_TIMEOUT_MS);
    expect(redis.options.commandTimeout).toBeGreaterThan(11_000); // BullMQ blocks ≤ 10 s, its watchdog 1 s more
    expect(redis.options.keepAlive).toBe(REDIS_LIMIT_DEFAULTS.keepAliveMs);
    const producer = connect('producer', 300) as IORedis;
    expect(producer.options.maxRetriesPerRequest).toBe(2);
    expect(producer.options.keepAlive).toBe(REDIS_LIMIT_DEFAULTS.keepAliveMs);
  });

  it('a worker connection fails a black-holed command too (after its longer bound), never waits forever', async () => {
    const redis = connect('worker', 300);
    await redisReady(redis);
    expect(await redis.ping()).toBe('PONG');
    proxy.blackHole();
    const started = Date.now();
    await expect(redis.ping()).rejects.toThrow('Command timed out');
    expect(Date.now() - started).toBeLessThan(WORKER_MIN_COMMAND_TIMEOUT_MS + 2000);
  }, 30_000);
});
