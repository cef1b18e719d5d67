import { randomUUID } from 'node:crypto';
import type { Logger } from '@gmg/logger';
import type { Redis } from './connection';

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
  /**
   * A rebuild's claim on the sentinels lives this long unless renewed (every third of it, while the rebuild runs):
   * a rebuilder killed mid-way (SIGKILL skips every cleanup) lets its claim expire, and the next check of any
   * replica claims it and rebuilds. Default 60 s.
   */
  claimTtlMs?: number;
}

/** Renews a claim still held by this rebuilder (KEYS[1] = sentinel; ARGV = its token, the TTL in ms). */
const RENEW_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;
/** Ends a claim still held by this rebuilder: ARGV[2] set: the sentinel for good (no TTL); empty: released. */
const END_LUA = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then return redis.call('DEL', KEYS[1]) end
redis.call('SET', KEYS[1], ARGV[2]) return 1`;

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
 * with it). Every interval: upsert the sweep's job scheduler, then claim the sentinel (SET NX with a TTL): the one
 * process that claims it after a loss rebuilds from Postgres, renewing its claim while it works, and sets the
 * sentinel for good when done. A failed rebuild gives the sentinel back and a killed one lets it expire, so the next
 * tick (of any replica) tries again. Ticks never overlap; the timer is cleared by stop().
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
      // one SET NX per key: each lives in its own shard's slot; a claim, not yet the sentinel (it expires unless renewed)
      const token = `rebuilding ${randomUUID()}`;
      const ttl = this.o.claimTtlMs ?? 60_000;
      const results = await Promise.all(keys.map((k) => redis.set(k, token, 'PX', ttl, 'NX')));
      const claimed = keys.filter((_, i) => results[i] === 'OK');
      if (claimed.length === 0) return 'healthy';
      logger.warn({ keeper: name, lost: claimed }, 'Redis has no sentinel (lost data or first start): rebuilding from Postgres');
      const end = (value: string): Promise<unknown> => Promise.all(claimed.map((k) => redis.eval(END_LUA, 1, k, token, value)));
      const heartbeat = setInterval(
        () => {
          void Promise.all(claimed.map((k) => redis.eval(RENEW_LUA, 1, k, token, String(ttl)))).catch((e: unknown) =>
            logger.warn({ keeper: name, err: (e as Error).message }, 'renewing the rebuild claim failed; it expires unless a renewal gets through'),
          );
        },
        Math.max(1, Math.floor(ttl / 3)),
      );
      heartbeat.unref(); // a rebuild left running at shutdown must not keep the process up
      try {
        await this.o.rebuild();
      } catch (e) {
        await end('').catch(() => undefined);
        throw e;
      } finally {
        clearInterval(heartbeat);
      }
      await end(new Date().toISOString());
      return 'rebuilt';
    } catch (e) {
      logger.error({ keeper: name, err: (e as Error).message }, 'sweep keeper check failed; retried next interval');
      return 'error';
    }
  }
}
