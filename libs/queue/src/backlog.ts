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
   * delivery is not enqueued: the shard is marked (webhook-deferral.ts) and the billing sweep, which enqueues an owed
   * delivery whose job is missing, looks back to the first decline instead of its usual 10 minutes (at most the
   * webhook max age, 24 h), so a deferred delivery is sent once there is room.
   */
  webhook: 200_000,
} as const;

/**
 * Whether a queue shard — or a pool's shards together — has room for one more job: the waiting (or paused) + delayed
 * + prioritized count, read at most every `refreshMs` (one round trip per shard; counted up locally in between),
 * against `cap` per shard. Declines are counted in `gmg_backlog_deferred_total{queue}`.
 * Concurrent callers share one read. A read that fails or takes longer than READ_WAIT_MS (Redis black-holed, failing
 * over) admits on the last count it knew (a late answer still updates it), and the next read waits `refreshMs`: the cap guards Redis memory, not money, and a Redis that cannot answer a
 * count cannot take the job either — the enqueue meets that and its caller's own path (reconcile, retry) handles it,
 * without a second command timeout on every call (test/e2e/redis-black-hole.e2e.test.ts).
 */
/** How long a caller waits for a count before it admits on the last one (a submit's path: no command timeout here). */
const READ_WAIT_MS = 250;

export class BacklogGate {
  private readonly seen = new WeakMap<Queue, { count: number; at: number; reading?: Promise<void> }>();

  constructor(
    readonly cap: number,
    private readonly refreshMs = 1000,
  ) {}

  async admits(queues: Queue | readonly Queue[]): Promise<boolean> {
    const list: readonly Queue[] = Array.isArray(queues) ? queues : [queues as Queue];
    const first = list[0]!;
    let s = this.seen.get(first);
    if (!s) this.seen.set(first, (s = { count: 0, at: -Infinity }));
    if (Date.now() - s.at >= this.refreshMs) {
      const state = s;
      state.reading ??= this.read(list, state).finally(() => (state.reading = undefined));
      // a healthy Redis answers in well under a millisecond; one that does not is not waited for past READ_WAIT_MS
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([state.reading, new Promise<void>((resolve) => (timer = setTimeout(resolve, READ_WAIT_MS)))]);
      clearTimeout(timer);
    }
    if (s.count >= this.cap * list.length) {
      backlogDeferred.inc({ queue: first.name });
      return false;
    }
    s.count++;
    return true;
  }

  private async read(list: readonly Queue[], s: { count: number; at: number }): Promise<void> {
    try {
      const counts = await Promise.all(list.map((q) => q.getJobCounts('wait', 'paused', 'delayed', 'prioritized')));
      s.count = counts.reduce((n, c) => n + (c.wait ?? 0) + (c.paused ?? 0) + (c.delayed ?? 0) + (c.prioritized ?? 0), 0);
    } catch {
      // admit on the last known count (above); nothing here is money
    } finally {
      s.at = Date.now();
    }
  }
}

/** The gates every producer of the process shares (per queue shard: the counts are per Queue object). */
export const SETTLE_GATE = new BacklogGate(BACKLOG_CAPS.settle);
export const WEBHOOK_GATE = new BacklogGate(BACKLOG_CAPS.webhook);
