import type { Job, Queue } from 'bullmq';
import { MAX_QUEUE_SHARDS } from '@gmg/contracts';
import type { Redis } from './connection';
import { shardFor } from './producers';

/** What one shard of a queue is, for the drain: its BullMQ key prefix, and a handle to read and remove its jobs. */
interface RetiredShardsOptions<Q extends Queue> {
  redis: Redis;
  /** The queue's name (its keys are `<keyPrefix(shard)>:<name>:<suffix>`). */
  name: string;
  /** The bracketed BullMQ prefix of shard `shard`. */
  keyPrefix(shard: number): string;
  /** A queue handle on shard `shard` (opened only when that shard holds jobs; closed after the drain). */
  open(shard: number): Q;
  /** The current shards (QUEUE_SHARDS), index = shard: a moved job goes to its task's shard among them. */
  current: readonly Q[];
  /** Jobs moved per retired shard per call (default 1,000): a backlog is worked off over the following calls. */
  batch?: number;
  /** Look this far for retired shards (default MAX_QUEUE_SHARDS, the most QUEUE_SHARDS allows). */
  maxShards?: number;
}

/** The states a job waits in for a consumer (active jobs are a live consumer's; finished ones stay where they are). */
const WAITING_STATES = ['wait', 'paused', 'prioritized', 'delayed'] as const;

/**
 * Moves the waiting jobs of a queue's retired shards (index ≥ the current count: QUEUE_SHARDS was lowered) onto the
 * current shard of their task, so that nothing waits where no replica of the new count looks. Each job is removed
 * first — BullMQ refuses to remove a job a consumer holds (an old replica still running the old count), so a job
 * is moved only while nobody runs it — then added again under the same job id, at once (a delayed retry runs
 * early; its attempts start over). A crash between the two loses that job; the Postgres sweeps (unsettled tasks,
 * owed webhooks) enqueue it again. One pipeline of O(1) commands per retired shard tells which hold jobs. Returns
 * the number of jobs moved.
 */
export async function drainRetiredShards<Q extends Queue>(o: RetiredShardsOptions<Q>): Promise<number> {
  const from = Math.max(1, o.current.length);
  const to = o.maxShards ?? MAX_QUEUE_SHARDS;
  const batch = o.batch ?? 1000;
  const holding = await Promise.all(
    Array.from({ length: Math.max(0, to - from) }, async (_, i) => {
      const shard = from + i;
      const key = (suffix: string): string => `${o.keyPrefix(shard)}:${o.name}:${suffix}`;
      // one slot per shard: a pipeline each
      const res = await o.redis.pipeline().llen(key('wait')).llen(key('paused')).zcard(key('prioritized')).zcard(key('delayed')).exec();
      const waiting = (res ?? []).reduce((n, [err, v]) => {
        if (err) throw err;
        return n + Number(v);
      }, 0);
      return waiting > 0 ? shard : undefined;
    }),
  );
  let moved = 0;
  for (const shard of holding) {
    if (shard === undefined) continue;
    const q = o.open(shard);
    try {
      const jobs = (await q.getJobs([...WAITING_STATES], 0, batch - 1)) as Job[];
      for (const job of jobs) {
        if (!job?.id) continue;
        const taskId = (job.data as { taskId?: unknown } | null)?.taskId;
        try {
          await job.remove();
        } catch {
          continue; // taken by a consumer of the old count meanwhile: it runs there
        }
        if (typeof taskId !== 'string') continue; // unreadable: it could never have succeeded
        await shardFor(o.current, taskId).add(job.name, job.data, { jobId: job.id });
        moved++;
      }
    } finally {
      await q.close();
    }
  }
  return moved;
}
