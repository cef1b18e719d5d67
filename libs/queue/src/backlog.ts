import type { Queue } from 'bullmq';
import { backlogDeferred } from '@gmg/observability';

/**
 * Count caps on what Redis keeps per queue shard while something is down (issue 38 item 4; the table in
 * docs/operations.md "Redis memory", "Backlogs"). Postgres is the record of every task and every settlement owed, so
 * at a cap Redis drops or declines only what it can get back from there — never money, never an accepted task.
 */
export const BACKLOG_CAPS = {
  /**
   * Task jobs waiting, delayed or prioritized per pool shard (workers down or far behind) above which the edge refuses
   * a submit before any money moves: 503 `service_unavailable` with `Retry-After`. ~1.5 KB each: ≤ ~150 MB per shard.
   */
  taskJobs: 100_000,
  /**
   * Failed jobs kept per queue shard (BullMQ `removeOnFail.count`, the oldest trimmed first; with their age limit).
   * A failed task job's task is failed and refunded in Postgres; a failed settle job's task stays unsettled there and
   * the billing sweep settles it; a failed delivery is in `webhook_deliveries`.
   */
  failedJobs: 10_000,
  /**
   * Settle jobs waiting or delayed per billing shard (a billing outage or lag) above which a settlement is not
   * enqueued: the task stays unsettled in Postgres and the billing sweep sends it again once there is room.
   * ~1.2 KB each: ≤ ~240 MB per shard.
   */
  settle: 200_000,
  /**
   * Webhook deliveries waiting or delayed per webhook shard (receivers failing: each retried for ~23 h) above which a
   * delivery is not enqueued; the billing sweep enqueues an owed delivery whose job is missing within its look-back
   * (10 min), so one deferred longer than that is not sent (no money moves; the task is still there to poll).
   */
  webhook: 200_000,
} as const;

/**
 * Whether a queue shard — or a pool's shards together — has room for one more job: the waiting (or paused) + delayed
 * + prioritized count, read at most every `refreshMs` (one round trip per shard; counted up locally in between),
 * against `cap` per shard. Declines are counted in `gmg_backlog_deferred_total{queue}`.
 */
export class BacklogGate {
  private readonly seen = new WeakMap<Queue, { count: number; at: number }>();

  constructor(
    readonly cap: number,
    private readonly refreshMs = 1000,
  ) {}

  async admits(queues: Queue | readonly Queue[]): Promise<boolean> {
    const list: readonly Queue[] = Array.isArray(queues) ? queues : [queues as Queue];
    const first = list[0]!;
    let s = this.seen.get(first);
    if (!s || Date.now() - s.at >= this.refreshMs) {
      const counts = await Promise.all(list.map((q) => q.getJobCounts('wait', 'paused', 'delayed', 'prioritized')));
      const count = counts.reduce((n, c) => n + (c.wait ?? 0) + (c.paused ?? 0) + (c.delayed ?? 0) + (c.prioritized ?? 0), 0);
      s = { count, at: Date.now() };
      this.seen.set(first, s);
    }
    if (s.count >= this.cap * list.length) {
      backlogDeferred.inc({ queue: first.name });
      return false;
    }
    s.count++;
    return true;
  }
}

/** The gates every producer of the process shares (per queue shard: the counts are per Queue object). */
export const SETTLE_GATE = new BacklogGate(BACKLOG_CAPS.settle);
export const WEBHOOK_GATE = new BacklogGate(BACKLOG_CAPS.webhook);
