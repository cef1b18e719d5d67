import type { RequestHandler } from 'express';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';
import { limiterKey, type Redis } from '@gmg/queue';
import { principalOf } from '../http/principal';
import { RpsLeaseLimiter, type RpsAnswer } from './rps-lease';

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
 * Counted through a token lease per (process, key) (rps-lease.ts): a hot key's requests take tokens this process
 * leased from the key's Redis window in batches, most of them with no Redis round trip; a key with little traffic
 * is counted in Redis request by request, as before. No window admits more than the limit.
 *
 * Redis down (docs/rate-limits.md): neither open nor closed — each replica counts in its own memory instead (taken
 * at once while the connection is not ready), so a key stays limited to its rate per replica and the API stays up.
 * Only an unexpected store error lets a request through (logged).
 */
export function createRateLimitMiddleware(opts: RateLimitOptions): RequestHandler {
  // one per app (app.ts mounts the same middleware on every route group it limits): one token lease per key
  const limiter = new RpsLeaseLimiter({ redis: opts.redis, keyPrefix: `${opts.prefix}:rps`, logger: opts.logger });
  const warn = redisDownWarner(opts.redis, opts.logger, 'rate limit: Redis unavailable, counting requests per replica in memory');

  return (_req, res, next) => {
    const principal = principalOf(res);
    const limit = principal.rpsLimit;
    if (limit === null || limit === undefined) return next();
    warn();
    const answer = (a: RpsAnswer): void => {
      if (a === null) return next();
      res.setHeader('X-RateLimit-Limit', String(limit));
      res.setHeader('X-RateLimit-Remaining', String(a.remaining));
      if (a.allowed) return next();
      const retryAfter = retryAfterSeconds(a.msBeforeNext);
      res.setHeader('Retry-After', String(retryAfter));
      next(new DomainError('rate_limited', `Rate limit exceeded: at most ${limit} requests per second for this key`, { retryAfter }));
    };
    const taken = limiter.take(limiterKey(principal.keyId), limit);
    if (taken instanceof Promise) taken.then(answer, next);
    else answer(taken);
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
