import { LRUCache } from 'lru-cache';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { AuthPrincipal } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';
import { limiterKey, type Redis } from '@gmg/queue';
import type { KeyAuthenticator } from './key-authenticator';

export interface FailedAuthThrottleOptions {
  redis: Redis;
  /** Redis key prefix (the QUEUE_PREFIX); counters are `<prefix>:authfail:{<client address>}` (keys.ts limiterKey). */
  prefix: string;
  /** Failed authentications one client address may make per window (FAILED_AUTH_LIMIT). */
  limit: number;
  /** The counting window in seconds (FAILED_AUTH_WINDOW_SECONDS). */
  windowSeconds: number;
  /** How long an address over its budget is refused (FAILED_AUTH_BLOCK_SECONDS). */
  blockSeconds: number;
  logger?: Pick<Logger, 'warn'>;
  /** Clock in ms (tests). */
  now?: () => number;
}

/**
 * Throttles failed API-key authentication per client address: an unknown key costs a Postgres lookup, so an
 * address that keeps guessing is refused (429 `rate_limit_error`, `Retry-After`) BEFORE the lookup once it is over
 * its budget. Failures are counted in Redis (shared by every replica); an address over its budget is remembered
 * in this replica's memory until its block ends, so the check before a lookup costs no round trip, and a replica
 * that has not seen the address yet lets one more lookup through before it learns of the block.
 * Redis down: failures are counted in this replica's memory instead (never unthrottled, never an outage).
 */
export class FailedAuthThrottle {
  private readonly limiter: RateLimiterRedis;
  /** client address → end of its block (ms). */
  private readonly blocked = new LRUCache<string, number>({ max: 100_000 });
  private readonly now: () => number;

  constructor(private readonly opts: FailedAuthThrottleOptions) {
    const budget = { points: opts.limit, duration: opts.windowSeconds, blockDuration: opts.blockSeconds };
    this.limiter = new RateLimiterRedis({
      storeClient: opts.redis,
      keyPrefix: `${opts.prefix}:authfail`,
      ...budget,
      rejectIfRedisNotReady: true,
      insuranceLimiter: new RateLimiterMemory(budget),
    });
    this.now = opts.now ?? Date.now;
  }

  /** Throws 429 when the address is over its budget; costs no I/O. */
  assertAllowed(address: string): void {
    const until = this.blocked.get(address);
    if (until === undefined) return;
    const ms = until - this.now();
    if (ms <= 0) {
      this.blocked.delete(address);
      return;
    }
    throw blockedError(ms);
  }

  /** Counts one failed authentication of the address; past its budget the address is blocked. */
  async recordFailure(address: string): Promise<void> {
    try {
      await this.limiter.consume(limiterKey(address), 1); // `<prefix>:authfail:{address}`: hash-tagged
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        this.blocked.set(address, this.now() + Math.max(1000, err.msBeforeNext));
        return;
      }
      this.opts.logger?.warn({ err: (err as Error).message }, 'failed-auth throttle: store error, failure not counted');
    }
  }
}

function blockedError(ms: number): DomainError {
  return new DomainError('rate_limited', 'Too many failed authentication attempts from this address: wait before trying again, and check the API key', {
    retryAfter: Math.max(1, Math.ceil(ms / 1000)),
  });
}

/**
 * Key authentication by client address (Express `req.ip`, which honours `trust proxy`), asked for only when
 * needed: a cached key that authenticates never computes it (parsing X-Forwarded-For on every request).
 */
export type AddressedAuthenticate = (secret: string, clientAddress: () => string) => Promise<AuthPrincipal | null>;

/**
 * The cached key lookup behind the throttle: a key whose answer is cached costs nothing and is never refused (a
 * client sharing an address with a guesser keeps working); any other lookup is refused while the address is
 * blocked, and every failure is counted.
 */
export function authenticateThrottled(keys: KeyAuthenticator, throttle?: FailedAuthThrottle): AddressedAuthenticate {
  if (!throttle) return (secret) => keys.authenticate(secret);
  return async (secret, address) => {
    if (!keys.isCached(secret)) throttle.assertAllowed(address());
    const principal = await keys.authenticate(secret);
    if (!principal) await throttle.recordFailure(address());
    return principal;
  };
}
