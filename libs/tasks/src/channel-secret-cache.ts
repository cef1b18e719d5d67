import { LRUCache } from 'lru-cache';
import type { ChannelRepository, ChannelWithSecret } from '@gmg/db';

/** How long a poll step reuses a channel's row (base URL, key, protocol). An operator's edit reaches polls this late. */
export const CHANNEL_CACHE_MS = 5_000;

/**
 * The channel a task is polled on, read at most once per CHANNEL_CACHE_MS per worker process instead of once per
 * poll: every poll step needs it, and at a 5 s cadence the same few channels were read ~2,000 times a second (half
 * the worker's Postgres round trips, docs/benchmarks.md "Worker capacity"). A missing channel is not cached (the
 * next poll looks again).
 */
export class ChannelSecretCache {
  private readonly cache: LRUCache<string, ChannelWithSecret>;

  constructor(
    private readonly channels: Pick<ChannelRepository, 'getWithSecret'>,
    ttlMs = CHANNEL_CACHE_MS,
    max = 1_000,
    /** The clock the ttl runs on (tests inject one; lru-cache's own otherwise). */
    now?: () => number,
  ) {
    this.cache = new LRUCache({ max, ttl: ttlMs, ...(now ? { perf: { now }, ttlResolution: 0 } : {}) });
  }

  async getWithSecret(id: string): Promise<ChannelWithSecret | null> {
    const hit = this.cache.get(id);
    if (hit) return hit;
    const ch = await this.channels.getWithSecret(id);
    if (ch) this.cache.set(id, ch);
    return ch;
  }
}
