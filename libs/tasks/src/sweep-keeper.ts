import type { Logger } from '@gmg/logger';
import type { Redis } from '@gmg/queue';

export interface SweepKeeperOptions {
  /** Names the keeper in logs (`pool image`, `billing`). */
  name: string;
  redis: Redis;
  /**
   * Keys that only this keeper's scope writes and nothing expires (keys.ts healSentinelKey, one in the slot of each
   * queue shard it guards): when one is missing, Redis lost that shard's data (FLUSHALL, a failover to an empty
   * replica, a restart without persistence), or this is the first start on this Redis.
   */
  sentinelKey: string | readonly string[];
  /** How often the keeper checks: the sweep interval, so a lost schedule is back within one interval. */
  intervalMs: number;
  /** Re-creates the sweep's job scheduler (BullMQ's upsert is idempotent: an existing schedule keeps its slot). */
  ensureSchedule(): Promise<unknown>;
  /** Rebuilds from Postgres what Redis lost (jobs, views, settlements). Idempotent: safe to run twice. */
  rebuild(): Promise<unknown>;
  logger: Logger;
}

/** What `sweepSchedule` needs of a BullMQ queue (any job catalog). */
interface SchedulingQueue {
  upsertJobScheduler(id: 'sweep', repeat: { every: number }, template: { name: 'sweep'; data: Record<string, never>; opts: object }): Promise<unknown>;
}

/**
 * The `ensureSchedule` of a sweep every `everyMs`: the queue's `sweep` job scheduler, one attempt per run (the next
 * run is the retry), a finished run not kept.
 */
export const sweepSchedule = (queue: SchedulingQueue, everyMs: number) => (): Promise<unknown> =>
  queue.upsertJobScheduler('sweep', { every: everyMs }, { name: 'sweep', data: {}, opts: { removeOnComplete: true, removeOnFail: 100, attempts: 1 } });

export type SweepKeeperTick = 'healthy' | 'rebuilt' | 'error';

/**
 * Keeps a sweep alive across Redis losses, on a plain process timer (not a BullMQ job, which a flush would take
 * with it). Every interval: upsert the sweep's job scheduler, then claim the sentinel (SET NX): the one process that
 * claims it after a loss rebuilds from Postgres. A failed rebuild gives the sentinel back, so the next tick (of any
 * replica) tries again. Ticks never overlap; the timer is cleared by stop().
 */
export class SweepKeeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<SweepKeeperTick> | undefined;
  private finished = 0;

  constructor(private readonly o: SweepKeeperOptions) {}

  /** Checks finished so far (the first one's included): what "back within N intervals" is counted in. */
  get ticks(): number {
    return this.finished;
  }

  /** The first tick runs now (and is awaited); the next ones every `intervalMs`. */
  async start(): Promise<SweepKeeperTick> {
    const first = await this.tick();
    this.timer = setInterval(() => void this.tick(), this.o.intervalMs);
    return first;
  }

  /** One check; while one runs, a second call returns the running one. */
  tick(): Promise<SweepKeeperTick> {
    this.running ??= this.check().finally(() => {
      this.running = undefined;
      this.finished++;
    });
    return this.running;
  }

  /**
   * Clears the timer and lets a running check finish, waiting at most `graceMs` (a check blocked on an unreachable
   * Redis must not hold up a shutdown; whatever it did not finish, the next process's first check redoes).
   */
  async stop(graceMs = 5000): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (!this.running) return;
    let t: NodeJS.Timeout | undefined;
    await Promise.race([
      this.running,
      new Promise<void>((resolve) => {
        t = setTimeout(resolve, graceMs);
      }),
    ]);
    clearTimeout(t);
  }

  private async check(): Promise<SweepKeeperTick> {
    const { name, redis, sentinelKey, logger } = this.o;
    try {
      await this.o.ensureSchedule();
      const keys = typeof sentinelKey === 'string' ? [sentinelKey] : sentinelKey;
      // one SET NX per key: each lives in its own shard's slot
      const now = new Date().toISOString();
      const results = await Promise.all(keys.map((k) => redis.set(k, now, 'NX')));
      const claimed = keys.filter((_, i) => results[i] === 'OK');
      if (claimed.length === 0) return 'healthy';
      logger.warn({ keeper: name, lost: claimed }, 'Redis has no sentinel (lost data or first start): rebuilding from Postgres');
      try {
        await this.o.rebuild();
      } catch (e) {
        await Promise.all(claimed.map((k) => redis.del(k).catch(() => undefined)));
        throw e;
      }
      return 'rebuilt';
    } catch (e) {
      logger.error({ keeper: name, err: (e as Error).message }, 'sweep keeper check failed; retried next interval');
      return 'error';
    }
  }
}
