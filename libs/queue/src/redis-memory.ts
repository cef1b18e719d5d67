import { redisPrimaries, type Redis } from './connection';

/** Memory of one Redis primary, from INFO memory. maxBytes 0: no limit set. */
export interface RedisMemory {
  usedBytes: number;
  maxBytes: number;
  policy: string;
}

const field = (info: string, name: string): string | undefined => new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();

/** INFO memory of every primary (one on a standalone server or Sentinel primary). */
export async function redisMemory(redis: Redis): Promise<RedisMemory[]> {
  return Promise.all(redisPrimaries(redis).map(async (node) => {
    const info = await node.info('memory');
    return {
      usedBytes: Number(field(info, 'used_memory') ?? 0),
      maxBytes: Number(field(info, 'maxmemory') ?? 0),
      policy: field(info, 'maxmemory_policy') ?? 'unknown',
    };
  }));
}

/**
 * Thrown by the readiness check when a primary is at its maxmemory under noeviction: every write fails there
 * (`OOM command not allowed`), so /readyz names it `full` instead of a bare `error`.
 */
export class RedisFullError extends Error {
  readonly readiness = 'full';
}

/**
 * At 98 % of maxmemory a primary counts as full: the requests in flight (their query buffers count too) push it
 * over, and writes start failing with OOM.
 */
const FULL_RATIO = 0.98;

/**
 * The Redis readiness check of every service: PING, then the memory of each primary — at (98 % of) its
 * maxmemory under noeviction, writes fail, and the answer says so (docs/operations.md, "Redis memory").
 */
export async function checkRedisReady(redis: Redis): Promise<void> {
  await redis.ping();
  const full = (await redisMemory(redis)).filter((m) => m.maxBytes > 0 && m.policy === 'noeviction' && m.usedBytes >= FULL_RATIO * m.maxBytes);
  if (full.length) {
    throw new RedisFullError(`Redis is full: ${full.map((m) => `${m.usedBytes} of maxmemory ${m.maxBytes} bytes used`).join('; ')}; under noeviction every write fails`);
  }
}

/**
 * What one task leaves in Redis, in bytes (measured: libs/tasks/src/redis-memory.int.test.ts, which fails when a
 * change makes a task cost more; docs/operations.md, "Redis memory"; 3,700 bytes in all measured 2026-11-25 on
 * the shared 2-core machine). `view`: its terminal task view (1 h; ~540 bytes); `job`: its completed task job with
 * its completed-set entry and its share of the queue's event stream (≤ 1 h, ≤ 10,000 per shard; the stream itself
 * is capped at 10,000 events per queue); `settle`: its settlement job (≤ 24 h, ≤ 100,000), likewise.
 */
export const REDIS_BYTES_PER_TASK = Object.freeze({ view: 700, job: 2_100, settle: 1_200 });

/** Redis's own memory and BullMQ's scripts and queue metadata, before any task. */
const REDIS_BASE_BYTES = 16 * 1024 * 1024;

/**
 * The maxmemory to set for a load (every term bounded by a TTL or a count cap), with 30 % headroom for
 * fragmentation and bursts: tasks finished per hour (views and task jobs), per day (settlement jobs), and the
 * task queue shards in all (the completed-job cap is per shard).
 */
export function redisMaxmemoryFor(load: { tasksPerHour: number; tasksPerDay: number; shards: number }): number {
  const b = REDIS_BYTES_PER_TASK;
  const bytes = REDIS_BASE_BYTES + b.view * load.tasksPerHour + b.job * Math.min(load.tasksPerHour, 10_000 * load.shards)
    + b.settle * Math.min(load.tasksPerDay, 100_000);
  return Math.ceil(bytes * 1.3);
}
