import type { RequestHandler } from 'express';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';
import { limiterKey, type Redis } from '@gmg/queue';
import { principalOf } from '../http/principal';

export interface RateLimitOptions {
  /** A ready ioredis client shared by every replica: the counters live in Redis, so the limit is global. */
  redis: Redis;
  /** Redis key prefix, e.g. the QUEUE_PREFIX; counters are `<prefix>:rps:{<apiKeyId>}` (keys.ts limiterKey). */
  prefix: string;
  logger?: Pick<Logger, 'warn'>;
}

/** Whole seconds until the window resets, at least 1 (Retry-After). */
export const retryAfterSeconds = (msBeforeNext: number): number => Math.max(1, Math.ceil(msBeforeNext / 1000));

/**
 * Requests per second per API key (`principal.rpsLimit`, the key's override else its group's; null = unlimited),
 * counted in fixed one-second windows in Redis. Over the limit → 429 `rate_limit_error` with `Retry-After`.
 * Mount after auth (reads `res.locals.principal`).
 *
 * Redis down (docs/rate-limits.md): neither open nor closed — each replica counts in its own memory instead (the
 * library's insurance limiter, taken at once while the connection is not ready), so a key stays limited to its
 * rate per replica and the API stays up. Only an unexpected store error lets a request through (logged).
 */
export function createRateLimitMiddleware(opts: RateLimitOptions): RequestHandler {
  // One limiter for every key: its own ceiling is never reached, the per-key limit is compared below, so keys
  // with different limits share one Redis counter layout.
  const window = { points: Number.MAX_SAFE_INTEGER, duration: 1 };
  const limiter = new RateLimiterRedis({
    storeClient: opts.redis,
    keyPrefix: `${opts.prefix}:rps`,
    ...window,
    rejectIfRedisNotReady: true,
    insuranceLimiter: new RateLimiterMemory(window),
  });
  const warn = redisDownWarner(opts.redis, opts.logger, 'rate limit: Redis unavailable, counting requests per replica in memory');

  return async (_req, res, next) => {
    const principal = principalOf(res);
    const limit = principal.rpsLimit;
    if (limit === null || limit === undefined) return next();
    warn();
    let r: RateLimiterRes;
    try {
      r = await limiter.consume(limiterKey(principal.keyId), 1);
    } catch (err) {
      if (err instanceof RateLimiterRes) r = err;
      else {
        opts.logger?.warn({ err }, 'rate limit: store error, request not limited');
        return next();
      }
    }
    res.setHeader('X-RateLimit-Limit', String(limit));
    res.setHeader('X-RateLimit-Remaining', String(Math.max(0, limit - r.consumedPoints)));
    if (r.consumedPoints > limit) {
      const retryAfter = retryAfterSeconds(r.msBeforeNext);
      res.setHeader('Retry-After', String(retryAfter));
      throw new DomainError('rate_limited', `Rate limit exceeded: at most ${limit} requests per second for this key`, { retryAfter });
    }
    next();
  };
}

/** A warning when the Redis connection is not ready, at most once per 10 s (a limiter degrades quietly otherwise). */
export function redisDownWarner(redis: Pick<Redis, 'status'>, logger: Pick<Logger, 'warn'> | undefined, message: string): () => void {
  let last = 0;
  return () => {
    if (redis.status === 'ready' || Date.now() - last < 10_000) return;
    last = Date.now();
    logger?.warn({ redisStatus: redis.status }, message);
  };
}
