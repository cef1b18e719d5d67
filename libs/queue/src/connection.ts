import IORedis, { Cluster, type ClusterOptions, type RedisOptions } from 'ioredis';
import { REDIS_LIMIT_DEFAULTS, type RedisLimits, type RedisTarget } from '@gmg/config';

/**
 * A connection to the gateway's Redis, whatever its topology: a standalone server or a Sentinel-managed primary
 * (ioredis `Redis`), or a Redis Cluster (ioredis `Cluster`). Both speak the same commands; keys are hash-tagged
 * (keys.ts) so no command spans slots.
 */
export type Redis = IORedis | Cluster;

type Role = 'worker' | 'producer' | 'client';

/** Credentials, database and TLS of a redis:// or rediss:// URL (what a cluster's nodes and a Sentinel primary use). */
function urlOptions(url: string): RedisOptions {
  const u = new URL(url);
  const db = Number(u.pathname.replace(/^\//, '') || '0');
  return {
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(db ? { db } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

/**
 * BullMQ blocks its worker's duplicated connection (which inherits these options) for up to 10 s per wait
 * (BZPOPMIN, plus its own 1 s watchdog): a worker connection's command timeout stays above that.
 */
export const WORKER_MIN_COMMAND_TIMEOUT_MS = 15_000;
/** Commands of a request-path connection retried at most this often across reconnects before they fail. */
const CLIENT_MAX_RETRIES_PER_REQUEST = 2;

/** Reconnect pauses: 50 ms doubling up to `maxMs`, ±20 % jitter so a fleet does not reconnect in step; never gives up. */
export function reconnectDelay(maxMs: number): (times: number) => number {
  return (times) => Math.round(Math.min(maxMs, 50 * 2 ** Math.min(Math.max(0, times - 1), 16)) * (0.8 + 0.4 * Math.random()));
}

/**
 * The bounds every connection gets (RedisLimits, docs/configuration.md): a command timeout — a black-holed Redis
 * fails the command instead of hanging it, after a money commit too — TCP keepalive, and a capped reconnect backoff.
 * Workers need maxRetriesPerRequest: null (BullMQ's requirement for its blocking connections: a command waits for
 * the reconnect instead of failing) and a command timeout above BullMQ's longest blocking wait; producers on the
 * request path fail fast instead of queueing commands while Redis is away. A plain URL string is a standalone server.
 */
export function createRedis(target: RedisTarget | string, role: Role = 'client', extra: RedisOptions = {}): Redis {
  const t: RedisTarget = typeof target === 'string' ? { kind: 'standalone', url: target } : target;
  const limits: RedisLimits = t.limits ?? REDIS_LIMIT_DEFAULTS;
  const bounds: RedisOptions = {
    commandTimeout: role === 'worker' ? Math.max(limits.commandTimeoutMs, WORKER_MIN_COMMAND_TIMEOUT_MS) : limits.commandTimeoutMs,
    keepAlive: limits.keepAliveMs,
    connectTimeout: 5000,
    retryStrategy: reconnectDelay(limits.reconnectMaxDelayMs),
  };
  const base: RedisOptions =
    role === 'worker'
      ? { ...bounds, maxRetriesPerRequest: null, enableReadyCheck: true }
      : { ...bounds, maxRetriesPerRequest: CLIENT_MAX_RETRIES_PER_REQUEST, enableOfflineQueue: role !== 'producer' };
  if (t.kind === 'standalone') return new IORedis(t.url, { ...base, ...extra, lazyConnect: false });
  if (t.kind === 'sentinel') {
    return new IORedis({ ...urlOptions(t.url), ...base, ...extra, sentinels: t.sentinels, name: t.master, lazyConnect: false });
  }
  const { db: _db, ...nodeOptions } = urlOptions(t.url); // a cluster has database 0 only
  const retry = extra.retryStrategy ?? base.retryStrategy!;
  const cluster: ClusterOptions = {
    redisOptions: { ...nodeOptions, ...base, ...extra },
    // primaries only: a replica may be behind, and jobs and views must read what was just written
    scaleReads: 'master',
    enableReadyCheck: true,
    lazyConnect: false,
    ...(extra.enableOfflineQueue !== undefined || base.enableOfflineQueue !== undefined
      ? { enableOfflineQueue: extra.enableOfflineQueue ?? base.enableOfflineQueue }
      : {}),
    ...(extra.enableAutoPipelining !== undefined ? { enableAutoPipelining: extra.enableAutoPipelining } : {}),
    clusterRetryStrategy: (n: number) => retry(n) ?? null,
  };
  return new Cluster(t.nodes, cluster);
}

/** The primaries a command like INFO, CONFIG or SCAN must go to one by one (a cluster answers them per node). */
export function redisPrimaries(redis: Redis): IORedis[] {
  return redis instanceof Cluster ? redis.nodes('master') : [redis];
}

/** Resolves once the client is ready (a cluster knows its primaries only then); rejects after `timeoutMs`. */
export function redisReady(redis: Redis, timeoutMs = 10_000): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => {
      redis.off('ready', onReady);
      reject(new Error(`Redis not ready within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = (): void => {
      clearTimeout(t);
      resolve();
    };
    redis.once('ready', onReady);
  });
}

/** Reads maxmemory-policy; queues need `noeviction` or jobs can vanish. On a cluster, the first primary that differs. */
export async function redisEvictionPolicy(redis: Redis): Promise<string> {
  await redisReady(redis);
  const policies = await Promise.all(
    redisPrimaries(redis).map(async (node) => {
      const res = (await node.config('GET', 'maxmemory-policy')) as unknown as string[];
      return res?.[1] ?? 'unknown';
    }),
  );
  return policies.find((p) => p !== 'noeviction') ?? policies[0] ?? 'unknown';
}

/** Warns (or refuses when `require`) if Redis may evict queue keys. */
export async function checkRedisPolicy(redis: Redis, require: boolean, warn: (msg: string) => void): Promise<void> {
  let policy: string;
  try {
    policy = await redisEvictionPolicy(redis);
  } catch {
    warn('could not read Redis maxmemory-policy (CONFIG disabled?); make sure it is noeviction');
    return;
  }
  if (policy !== 'noeviction') {
    const msg = `Redis maxmemory-policy is '${policy}', not 'noeviction': queued jobs may be evicted under memory pressure`;
    if (require) throw new Error(msg);
    warn(msg);
  }
}
