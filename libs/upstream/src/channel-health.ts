import type { UpstreamError } from '@gmg/errors';
import type { ChannelTarget } from './adapter';
import type { CircuitBreaker } from './circuit-breaker';
import type { HealthView } from './channel-keys';

/** The shared health store (structurally @gmg/db's ChannelHealthRepository). */
export interface ChannelHealthStore {
  keyRefused(keyId: string, message: string): Promise<void>;
  keyRateLimited(keyId: string, message: string, retryAfterMs: number | undefined): Promise<void>;
  keyBack(keyId: string): Promise<void>;
  channelDown(channelId: string, status: 'cooling' | 'disabled', message: string): Promise<void>;
}

/**
 * What a failed vendor call says about the channel or key that made it:
 * - `refused`: the vendor refused OUR credentials or balance (401/402/403 not about the content — upstream-failure.ts
 *   classifies those as kind `channel` — or a documented balance/quota refusal such as OpenAI's 429
 *   `insufficient_quota` or Anthropic's "credit balance is too low");
 * - `rate_limited`: a 429 (kind `quota`) that is a rate limit;
 * - `failing`: the vendor is down or silent (5xx, timeouts, network);
 * - `none`: the client's own error (400, a content refusal, 413, 404…), which never counts against a channel.
 */
export type HealthEffect = 'refused' | 'rate_limited' | 'failing' | 'none';

const BALANCE_REFUSAL =
  /insufficient[_ ](quota|balance|credits?|funds)|credit balance is too low|billing[_ ]hard[_ ]limit|exceeded your current quota|account (is )?(suspended|deactivated)/i;

export function healthEffect(e: Pick<UpstreamError, 'kind' | 'message'>): HealthEffect {
  if (e.kind === 'moderation') return 'none';
  if (e.kind === 'channel' || BALANCE_REFUSAL.test(e.message)) return 'refused';
  if (e.kind === 'quota') return 'rate_limited';
  if (e.kind === 'server' || e.kind === 'timeout' || e.kind === 'network') return 'failing';
  return 'none';
}

/**
 * Feeds call outcomes to a channel's health: the in-process CircuitBreaker stays the fast path (it counts consecutive
 * failures without a write per call), Postgres holds the shared truth (a refused key at once; a channel whose
 * breaker opened cools down for every replica until the probe's trial brings it back).
 */
export class ChannelHealthReporter {
  constructor(
    private readonly store: ChannelHealthStore,
    private readonly breaker: Pick<CircuitBreaker, 'recordFailure' | 'recordSuccess' | 'state'>,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  /** A call failed with `effect` (healthEffect of its UpstreamError, or the relay's own reading of a status). */
  async failed(ch: Pick<ChannelTarget, 'id' | 'keyId'>, effect: HealthEffect, message: string, retryAfterMs?: number): Promise<void> {
    try {
      if (effect === 'refused') {
        // one key refused: that key only; a channel with its one key: the channel
        if (ch.keyId) await this.store.keyRefused(ch.keyId, message);
        else await this.store.channelDown(ch.id, 'disabled', message);
        return;
      }
      if (effect === 'rate_limited' && ch.keyId) {
        await this.store.keyRateLimited(ch.keyId, message, retryAfterMs);
        return;
      }
      if (effect === 'failing' || effect === 'rate_limited') {
        const wasOpen = this.breaker.state(ch.id) !== 'closed';
        this.breaker.recordFailure(ch.id);
        if (!wasOpen && this.breaker.state(ch.id) === 'open') await this.store.channelDown(ch.id, 'cooling', message);
      }
    } catch (err) {
      this.onError(err);
    }
  }

  /** A call succeeded: the breaker closes; a key that was cooling (its rate limit past) is marked active again. */
  async succeeded(ch: Pick<ChannelTarget, 'id' | 'keyId'>, key?: HealthView | null): Promise<void> {
    this.breaker.recordSuccess(ch.id);
    if (ch.keyId && key && key.status !== 'active') await this.store.keyBack(ch.keyId).catch(this.onError);
  }
}

/** The same reading for a raw vendor answer (the messages relay, the channel test): its status and its message. */
export function statusEffect(status: number | undefined, message = ''): HealthEffect {
  if (status === undefined) return 'failing';
  if (status === 401 || status === 402 || status === 403 || BALANCE_REFUSAL.test(message)) return 'refused';
  if (status === 429) return 'rate_limited';
  if (status >= 500 || status === 408) return 'failing';
  return 'none';
}
