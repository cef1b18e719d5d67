import { performance } from 'node:perf_hooks';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Logger } from '@gmg/logger';
import type { Redis } from '@gmg/queue';

/** What the limiter answered for one request. */
export interface RpsDecision {
  allowed: boolean;
  /** X-RateLimit-Remaining (approximate across replicas: docs/rate-limits.md). */
  remaining: number;
  /** Until the window ends (Retry-After of a refusal). */
  msBeforeNext: number;
}

/** Not limited: an unexpected error of the store and of the memory insurance (logged; the request goes through). */
export type RpsAnswer = RpsDecision | null;

export interface RpsLeaseOptions {
  redis: Redis;
  /** The counter of key `k` is `<keyPrefix>:<k>`, rate-limiter-flexible's layout (see LEASE_LUA). */
  keyPrefix: string;
  logger?: Pick<Logger, 'warn'>;
  /** A monotonic clock in ms (tests may inject one); performance.now by default. */
  now?: () => number;
  /** At most this many keys have local state (default MAX_KEYS). */
  maxKeys?: number;
}

/** The window, in seconds: rate-limiter-flexible's `duration` the edge used (fixed one-second windows). */
export const WINDOW_SECONDS = 1;
/** Local state is kept for at most this many keys per process (≈ 200 bytes each): see `RpsLeaseLimiter.sweep`. */
export const MAX_KEYS = 10_000;
/** The spare tokens a fetch may take beyond the requests waiting on it: never more than this nor limit / 20. */
export const MAX_BATCH = 256;

/**
 * One atomic step on the window's counter, the same key, value and TTL as rate-limiter-flexible 7's RateLimiterRedis
 * (lib/RateLimiterRedis.js, `incrTtlLuaScript`, which the edge used with keyPrefix `<prefix>:rps`, duration 1): key
 * `<prefix>:rps:{<api key id>}`, a plain integer counting the window's requests, created by `SET key 0 EX 1 NX` on
 * the window's first request and expiring with it. Replicas still running the library INCR the same counter and
 * compare it with the limit, so a rolling deploy keeps one count per key.
 *
 * Wanted ARGV[1] tokens; granted = what still fits under the limit ARGV[2] (0 when the window is full), and the
 * counter grows by what was granted — by 1 when nothing was (a refused request counts, as in the library, so the
 * counter may exceed the limit by refused requests but the tokens granted never do). Returns
 * {counter after, PTTL ms, granted}.
 */
const LEASE_LUA = `redis.call('set', KEYS[1], 0, 'EX', ARGV[3], 'NX')
local before = tonumber(redis.call('get', KEYS[1])) or 0
local granted = math.min(tonumber(ARGV[1]), tonumber(ARGV[2]) - before)
if granted < 0 then granted = 0 end
local consumed = redis.call('incrby', KEYS[1], math.max(granted, 1))
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then
  redis.call('expire', KEYS[1], ARGV[3])
  ttl = 1000 * ARGV[3]
end
return {consumed, ttl, granted}`;

const COMMAND = 'gmgRpsLease';
type LeaseCommand = { [COMMAND](key: string, want: number, limit: number, windowSeconds: number): Promise<[number, number, number]> };

interface Waiter {
  limit: number;
  resolve: (a: RpsAnswer | Promise<RpsAnswer>) => void;
}

interface KeyState {
  /** Leased tokens not used yet: valid while now < expiresAt (the window's end as this process knows it). */
  tokens: number;
  expiresAt: number;
  /** The window's counter as last read from Redis (it includes this process's unused tokens). */
  lastCount: number;
  /** The last fetch found the window full for limits ≤ fullLimit: refuse locally until expiresAt. */
  full: boolean;
  fullLimit: number;
  /** Requests this process saw of the key in the local second `second`, and in the second before it. */
  second: number;
  seen: number;
  prevSeen: number;
  waiters: Waiter[];
  fetching: boolean;
}

/**
 * Requests per second per key with a token lease per (process, key): a request takes a token this process leased
 * from the key's Redis window when one is left (no Redis call); otherwise it waits on the key's one fetch in flight
 * (single flight), which takes from Redis, in one atomic step, a token for every request waiting plus b − 1 spare
 * ones. b = 1 for a key with little traffic (then every request is counted in Redis as it comes, exactly as with
 * one INCR per request); else an eighth of the requests this process saw of the key in the previous (or current,
 * if more) second, at most limit / 20 and 256. Spare tokens are dropped when the window ends. So:
 * - no window ever admits more than the limit (tokens are granted only while they fit under the counter);
 * - at most b − 1 tokens per replica per window go unused while another replica refuses (under-admission).
 *
 * Redis not ready: each process counts in memory (RateLimiterMemory, as the library's insurance limiter did), at
 * once; a failed Redis command does the same for the requests that waited on it. docs/rate-limits.md.
 */
export class RpsLeaseLimiter {
  private readonly keys = new Map<string, KeyState>();
  private readonly memory = new RateLimiterMemory({ points: Number.MAX_SAFE_INTEGER, duration: WINDOW_SECONDS });
  private readonly now: () => number;
  private readonly maxKeys: number;
  private sweptSecond = 0;
  private lastErrorLog = -Infinity;

  constructor(private readonly opts: RpsLeaseOptions) {
    this.now = opts.now ?? (() => performance.now());
    this.maxKeys = opts.maxKeys ?? MAX_KEYS;
    opts.redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: LEASE_LUA });
  }

  /** Redis counter of `key` (rate-limiter-flexible's `getKey`). */
  redisKey(key: string): string {
    return `${this.opts.keyPrefix}:${key}`;
  }

  /** Keys with local state (tests: the bound). */
  get size(): number {
    return this.keys.size;
  }

  /** Tokens of `key` leased and not used yet, whatever their window (tests). */
  leased(key: string): number {
    return this.keys.get(key)?.tokens ?? 0;
  }

  /** The spare tokens a fetch for `key` would take now, plus one (tests, docs). */
  batchSize(key: string, limit: number): number {
    const s = this.keys.get(key);
    return s ? batchOf(s, limit) : 1;
  }

  /**
   * One request of `key` limited to `limit` per window. Synchronous when a leased token is left or the window is
   * known to be full (the common case of a hot key), else a promise.
   */
  take(key: string, limit: number): RpsAnswer | Promise<RpsAnswer> {
    const now = this.now();
    const s = this.stateOf(key, now);
    const second = Math.floor(now / 1000);
    if (second !== s.second) {
      s.prevSeen = second === s.second + 1 ? s.seen : 0;
      s.seen = 0;
      s.second = second;
    }
    s.seen++;
    if (now < s.expiresAt) {
      if (s.tokens > 0) {
        s.tokens--;
        return { allowed: true, remaining: remainingOf(s, limit), msBeforeNext: s.expiresAt - now };
      }
      if (s.full && limit <= s.fullLimit && s.waiters.length === 0) return { allowed: false, remaining: 0, msBeforeNext: s.expiresAt - now };
    } else {
      s.tokens = 0; // the window ended: its tokens are dropped, the next request goes by the new one
      s.full = false;
    }
    if (this.opts.redis.status !== 'ready') return this.insurance(key, limit);
    return new Promise<RpsAnswer>((resolve) => {
      s.waiters.push({ limit, resolve });
      if (!s.fetching) this.fetch(key, s);
    });
  }

  private fetch(key: string, s: KeyState): void {
    s.fetching = true;
    const limit = s.waiters[0]!.limit;
    const want = s.waiters.length + batchOf(s, limit) - 1;
    const sentAt = this.now();
    (this.opts.redis as unknown as LeaseCommand)[COMMAND](this.redisKey(key), want, limit, WINDOW_SECONDS).then(
      ([count, pttl, granted]) => {
        s.fetching = false;
        // the window ends pttl after Redis answered, so no earlier than pttl after the command was sent: a token is
        // never used locally after its window ended in Redis
        s.expiresAt = sentAt + Number(pttl);
        s.lastCount = Number(count);
        s.tokens = Number(granted);
        s.full = s.tokens < want;
        s.fullLimit = limit;
        const now = this.now();
        const waiting = s.waiters;
        s.waiters = [];
        let i = 0;
        // every request waiting now gets a token of this grant (it was counted in this window, like a request whose
        // INCR answered just now)
        for (; i < waiting.length && s.tokens > 0; i++) {
          s.tokens--;
          waiting[i]!.resolve({ allowed: true, remaining: remainingOf(s, waiting[i]!.limit), msBeforeNext: Math.max(0, s.expiresAt - now) });
        }
        if (now >= s.expiresAt) s.tokens = 0;
        const rest = waiting.slice(i);
        if (rest.length === 0) return;
        if (s.full) {
          for (const w of rest) w.resolve({ allowed: false, remaining: 0, msBeforeNext: Math.max(0, s.expiresAt - now) });
        } else {
          // came while the fetch was in flight, more than its spare tokens: one more fetch for all of them
          s.waiters = rest;
          this.fetch(key, s);
        }
      },
      (err: unknown) => {
        s.fetching = false;
        const waiting = s.waiters;
        s.waiters = [];
        const now = this.now();
        if (now - this.lastErrorLog >= 10_000) {
          this.lastErrorLog = now;
          this.opts.logger?.warn({ err }, 'rate limit: Redis command failed, counting requests per replica in memory');
        }
        for (const w of waiting) w.resolve(this.insurance(key, w.limit));
      },
    );
  }

  /** The memory count of this process (Redis not ready or failing), as the library's insurance limiter. */
  private async insurance(key: string, limit: number): Promise<RpsAnswer> {
    let r: RateLimiterRes;
    try {
      r = await this.memory.consume(key, 1);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) {
        this.opts.logger?.warn({ err }, 'rate limit: store error, request not limited');
        return null;
      }
      r = err;
    }
    return { allowed: r.consumedPoints <= limit, remaining: Math.max(0, limit - r.consumedPoints), msBeforeNext: r.msBeforeNext };
  }

  private stateOf(key: string, now: number): KeyState {
    const second = Math.floor(now / 1000);
    if (second !== this.sweptSecond) this.sweep(now, second);
    let s = this.keys.get(key);
    if (!s) {
      if (this.keys.size >= this.maxKeys) this.evict();
      s = { tokens: 0, expiresAt: -Infinity, lastCount: 0, full: false, fullLimit: 0, second, seen: 0, prevSeen: 0, waiters: [], fetching: false };
      this.keys.set(key, s);
    }
    return s;
  }

  /**
   * Once per second: forget the keys idle for a second or more whose window ended (nothing of theirs is left to
   * use, their rate estimate is 0). Bound: MAX_KEYS keys; at the bound, `evict` drops idle keys oldest-first (a
   * dropped key loses at most its spare tokens — fewer admissions, never more).
   */
  private sweep(now: number, second: number): void {
    this.sweptSecond = second;
    for (const [key, s] of this.keys) {
      if (s.second < second - 1 && now >= s.expiresAt && !s.fetching) this.keys.delete(key);
    }
  }

  private evict(): void {
    for (const [key, s] of this.keys) {
      if (this.keys.size < this.maxKeys * 0.9) return;
      if (!s.fetching) this.keys.delete(key);
    }
  }
}

/** Tokens a fetch takes beyond the requests waiting on it, plus one: see RpsLeaseLimiter. */
function batchOf(s: KeyState, limit: number): number {
  return Math.max(1, Math.min(Math.floor(Math.max(s.prevSeen, s.seen) / 8), Math.floor(limit / 20), MAX_BATCH));
}

/** limit − the window's count as last read + this process's unused tokens (counted in it, not used yet). */
function remainingOf(s: KeyState, limit: number): number {
  return Math.max(0, limit - s.lastCount + s.tokens);
}
