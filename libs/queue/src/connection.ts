import IORedis, { type Redis, type RedisOptions } from 'ioredis';

export type { Redis };

/**
 * Workers need maxRetriesPerRequest: null (BullMQ blocks on Redis); producers on the request path fail fast
 * instead of queueing commands forever while Redis is away.
 */
export function createRedis(url: string, role: 'worker' | 'producer' | 'client' = 'client', extra: RedisOptions = {}): Redis {
  const base: RedisOptions = role === 'worker'
    ? { maxRetriesPerRequest: null, enableReadyCheck: true }
    : { maxRetriesPerRequest: 2, enableOfflineQueue: role !== 'producer', connectTimeout: 5000 };
  return new IORedis(url, { ...base, ...extra, lazyConnect: false });
}

/** Reads maxmemory-policy; queues need `noeviction` or jobs can vanish. */
export async function redisEvictionPolicy(redis: Redis): Promise<string> {
  const res = (await redis.config('GET', 'maxmemory-policy')) as unknown as string[];
  return res?.[1] ?? 'unknown';
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
