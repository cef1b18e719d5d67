import IORedis, { Cluster, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisTarget } from '@gmg/config';

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
 * Workers need maxRetriesPerRequest: null (BullMQ blocks on Redis); producers on the request path fail fast
 * instead of queueing commands forever while Redis is away. A plain URL string is a standalone server.
 */
export function createRedis(target: RedisTarget | string, role: Role = 'client', extra: RedisOptions = {}): Redis {
  const t: RedisTarget = typeof target === 'string' ? { kind: 'standalone', url: target } : target;
  const base: RedisOptions =
    role === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : { maxRetriesPerRequest: 2, enableOfflineQueue: role !== 'producer', connectTimeout: 5000 };
  if (t.kind === 'standalone') return new IORedis(t.url, { ...base, ...extra, lazyConnect: false });
  if (t.kind === 'sentinel') {
    return new IORedis({ ...urlOptions(t.url), ...base, ...extra, sentinels: t.sentinels, name: t.master, lazyConnect: false });
  }
  const { db: _db, ...nodeOptions } = urlOptions(t.url); // a cluster has database 0 only
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
    ...(extra.retryStrategy !== undefined ? { clusterRetryStrategy: (n: number) => extra.retryStrategy!(n) ?? null } : {}),
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
