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
  return Promise.all(
    redisPrimaries(redis).map(async (node) => {
      const info = await node.info('memory');
      return {
        usedBytes: Number(field(info, 'used_memory') ?? 0),
        maxBytes: Number(field(info, 'maxmemory') ?? 0),
        policy: field(info, 'maxmemory_policy') ?? 'unknown',
      };
    }),
  );
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
 * The Redis readiness check of every service: this process's own connection — its client is connected and a PING
 * through it is answered (on a cluster by any one primary it knows). Never the health of every primary: one shard
 * failing over or filling up is the same for every replica, and taking them all out of their Service at once
 * (the edge's endpoints emptied) would turn a partial outage into a full one (issue 38).
 */
export async function checkRedisReady(redis: Redis): Promise<void> {
  if (redis.status !== 'ready') throw new Error(`Redis connection ${redis.status}`);
  const nodes = redisPrimaries(redis);
  await Promise.any(nodes.length ? nodes.map((n) => n.ping()) : [redis.ping()]);
}

/**
 * Reported beside readiness, never a reason to be unready (a `degradable` check): a primary at (98 % of) its
 * maxmemory under noeviction fails every write there, and the answer names it `full` (docs/operations.md, "Redis
 * memory") for the operator and the alert.
 */
export async function checkRedisMemory(redis: Redis): Promise<void> {
  const full = (await redisMemory(redis)).filter((m) => m.maxBytes > 0 && m.policy === 'noeviction' && m.usedBytes >= FULL_RATIO * m.maxBytes);
  if (full.length) {
    throw new RedisFullError(
      `Redis is full: ${full.map((m) => `${m.usedBytes} of maxmemory ${m.maxBytes} bytes used`).join('; ')}; under noeviction every write fails`,
    );
  }
}

/**
 * What one task costs in Redis, in bytes (measured: libs/tasks/src/redis-memory.int.test.ts, which fails when a
 * change makes a task cost more; docs/operations.md, "Redis memory"; 2026-11-26 on the shared 2-core machine: 1,941
 * bytes per finished task, 941 per task in flight). `view`: its task view (open: 2 h, renewed while it changes;
 * terminal: 1 h; ~540 bytes); `open`: while it polls, its due-poll entry (due-polls.ts); `events`: its share of its
 * queues' event streams (capped at 10,000 events per queue: bounded by the number of queues, see EVENTS_PER_TASK);
 * `settle`: its settlement job (≤ 24 h, ≤ 100,000); `idempotency`: a keyed submit's stored answer (a reference to its
 * task, 24 h; ~280 bytes with a production-length key). Task jobs are removed when they end (TASK_JOB_OPTIONS).
 */
export const REDIS_BYTES_PER_TASK = Object.freeze({ view: 700, open: 250, events: 700, settle: 1_200, idempotency: 320 });

/** Events one task adds to its queues' streams (added, active, completed … on the task and billing queues). */
const EVENTS_PER_TASK = 8;
/** BullMQ caps each queue's event stream at this many entries. */
const EVENTS_PER_QUEUE = 10_000;

/** Redis's own memory and BullMQ's scripts and queue metadata, before any task. */
const REDIS_BASE_BYTES = 16 * 1024 * 1024;

/** A load to size Redis for. */
interface RedisLoad {
  /** Tasks ending per hour (terminal views live 1 h). */
  tasksPerHour: number;
  /** Tasks ending per day (settlement jobs are kept 24 h, at most 100,000). */
  tasksPerDay: number;
  /** Tasks in flight at once (open views and due polls). */
  openTasks: number;
  /** Submits with an Idempotency-Key per day (their answers are kept 24 h). */
  keyedSubmitsPerDay: number;
  /** Queues in all (task queue shards + billing + webhook): each event stream is capped on its own. */
  shards: number;
}

/**
 * The maxmemory to set for a load (every term bounded by a TTL or a count cap), with 30 % headroom for
 * fragmentation and bursts.
 */
export function redisMaxmemoryFor(load: RedisLoad): number {
  const b = REDIS_BYTES_PER_TASK;
  const eventTasks = Math.min(load.tasksPerHour + load.openTasks, (EVENTS_PER_QUEUE / EVENTS_PER_TASK) * (load.shards + 2));
  const bytes =
    REDIS_BASE_BYTES +
    b.view * (load.tasksPerHour + load.openTasks) +
    b.open * load.openTasks +
    b.events * eventTasks +
    b.settle * Math.min(load.tasksPerDay, 100_000) +
    b.idempotency * load.keyedSubmitsPerDay;
  return Math.ceil(bytes * 1.3);
}
