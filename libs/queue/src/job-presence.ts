import type { Queue } from 'bullmq';
import type { Redis } from './connection';

/** Where a job id stands: no job hash (`missing`), in the completed or failed set (`finished`), else `live`. */
export type JobPresence = 'missing' | 'live' | 'finished';

/**
 * The presence of many jobs of one queue in ONE pipelined round trip of O(1) commands (EXISTS on the job hash,
 * ZSCORE in completed and failed) — unlike `job.getState()`, which scans the wait list (LPOS, O(length of the list))
 * for every job: a sweep over a backlog of N queued jobs cost O(N²) Redis work that way (docs/benchmarks.md,
 * "Billing throughput"). A pipeline error (the command itself failed) throws: the caller retries the page later.
 */
export async function jobPresence(queue: Pick<Queue, 'client' | 'toKey'>, jobIds: readonly string[]): Promise<JobPresence[]> {
  if (jobIds.length === 0) return [];
  const client = (await queue.client) as unknown as Redis;
  const pipe = client.pipeline();
  for (const id of jobIds) {
    pipe.exists(queue.toKey(id));
    pipe.zscore(queue.toKey('completed'), id);
    pipe.zscore(queue.toKey('failed'), id);
  }
  const res = (await pipe.exec()) ?? [];
  return jobIds.map((_, i) => {
    const [exists, completed, failed] = [0, 1, 2].map((k) => {
      const [err, value] = res[3 * i + k] ?? [new Error('no pipeline reply'), null];
      if (err) throw err;
      return value;
    });
    if (exists !== 1) return 'missing';
    return completed !== null || failed !== null ? 'finished' : 'live';
  });
}
