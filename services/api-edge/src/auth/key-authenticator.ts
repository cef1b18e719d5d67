import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { AuthPrincipal } from '@gmg/db';
import { DomainError, isDependencyUnavailable } from '@gmg/errors';

export interface KeyLookup {
  authenticate(secret: string): Promise<AuthPrincipal | null>;
}

export interface KeyAuthenticatorOptions {
  /** How long a known key is trusted without asking Postgres (a revoked key keeps working at most this long). */
  ttlMs: number;
  /** Unknown keys are remembered shorter: a key created a moment ago should work almost at once. */
  missTtlMs?: number;
  maxEntries?: number;
  /**
   * How long past its TTL a KNOWN key still authenticates while Postgres is unreachable (the lookup fails with a
   * dependency error): polls and cached work go on through a short outage instead of every request failing. 0: never.
   */
  staleIfErrorMs?: number;
  /** Clock in ms (tests inject one); with it, expiry is checked against it on every read. */
  now?: () => number;
}

interface Entry {
  principal: AuthPrincipal | null;
}

/**
 * A found key that may not be used now answers 401 with its own message: past its `expires_at`, or a secret its
 * rotation replaced once the overlap ended. Checked on every answer, cached ones too (the principal carries both
 * times), so a cached key stops at the second it expires, not a cache TTL later.
 */
export function assertUsable(principal: AuthPrincipal | null, nowMs: number): AuthPrincipal | null {
  if (!principal) return null;
  if (principal.expiresAt && principal.expiresAt.getTime() <= nowMs) {
    throw new DomainError('authentication', `This API key expired at ${principal.expiresAt.toISOString()}; ask for a new key`);
  }
  const until = principal.rotatedSecretValidUntil;
  if (until && until.getTime() <= nowMs) {
    throw new DomainError('authentication', `This API key's secret was rotated; the old secret stopped working at ${until.toISOString()}: use the new secret`);
  }
  return principal;
}

/** Longest secret we bother hashing; anything longer is not one of our keys. */
const MAX_SECRET_LENGTH = 256;

/** One-shot SHA-256 (`crypto.hash`: a third of createHash's cost for a key-sized input; it runs on every request). */
const cacheId = (secret: string): string => hash('sha256', secret, 'hex');

/**
 * API key → principal, with a short in-process cache keyed by the key's SHA-256 (the raw secret is never a
 * map key) and one in-flight lookup per key, so a burst of requests with one key costs one query.
 */
export class KeyAuthenticator {
  private readonly cache: LRUCache<string, Entry>;
  private readonly inflight = new Map<string, Promise<AuthPrincipal | null>>();
  private readonly missTtlMs: number;
  /** Bumped by clear(): a lookup started before it answers its callers but caches nothing. */
  private generation = 0;

  constructor(
    private readonly lookup: KeyLookup,
    private readonly opts: KeyAuthenticatorOptions,
  ) {
    this.missTtlMs = opts.missTtlMs ?? Math.min(1000, opts.ttlMs);
    const clock = opts.now ? { perf: { now: opts.now }, ttlResolution: 0 } : {};
    // an expired entry stays (until evicted) so it can answer while Postgres is down: reads skip it, `stale` finds it
    this.cache = new LRUCache<string, Entry>({
      max: opts.maxEntries ?? 10_000,
      ttl: Math.max(1, opts.ttlMs),
      ttlAutopurge: false,
      noDeleteOnStaleGet: true,
      ...clock,
    });
  }

  /** The key's principal; null for an unknown or revoked key; throws 401 for an expired key or a rotated-out secret. */
  async authenticate(secret: string): Promise<AuthPrincipal | null> {
    return assertUsable(await this.find(secret), this.opts.now?.() ?? Date.now());
  }

  private async find(secret: string): Promise<AuthPrincipal | null> {
    if (!secret || secret.length > MAX_SECRET_LENGTH) return null;
    if (this.opts.ttlMs <= 0) return this.lookup.authenticate(secret);
    const id = cacheId(secret);
    const hit = this.cache.get(id);
    if (hit) return hit.principal;
    const pending = this.inflight.get(id);
    if (pending) return pending;
    const generation = this.generation;
    const p = this.lookup
      .authenticate(secret)
      .then(
        (principal) => {
          if (generation === this.generation) this.cache.set(id, { principal }, principal ? undefined : { ttl: Math.max(1, this.missTtlMs) });
          return principal;
        },
        (err: unknown) => {
          const stale = this.stale(id);
          if (stale && isDependencyUnavailable(err)) return stale;
          throw err;
        },
      )
      .finally(() => {
        if (this.inflight.get(id) === p) this.inflight.delete(id);
      });
    this.inflight.set(id, p);
    return p;
  }

  /** Whether authenticate(secret) answers without a new Postgres lookup (cached, already being looked up, or not a key). */
  isCached(secret: string): boolean {
    if (!secret || secret.length > MAX_SECRET_LENGTH) return true;
    if (this.opts.ttlMs <= 0) return false;
    const id = cacheId(secret);
    return this.cache.has(id) || this.inflight.has(id);
  }

  /** A known key's expired entry, while within `staleIfErrorMs` past its TTL. */
  private stale(id: string): AuthPrincipal | null {
    const max = this.opts.staleIfErrorMs ?? 0;
    if (max <= 0) return null;
    const e = this.cache.get(id, { allowStale: true });
    if (!e?.principal) return null;
    return -this.cache.getRemainingTTL(id) <= max ? e.principal : null;
  }

  /**
   * Forget every cached key and every lookup under way (tests; a management action that must apply at once): the
   * next request asks Postgres again, and an older lookup's answer, read before the change, is not cached.
   */
  clear(): void {
    this.generation++;
    this.cache.clear();
    this.inflight.clear();
  }
}
