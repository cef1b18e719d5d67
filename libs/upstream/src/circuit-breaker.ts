import type { ChannelGate } from './channel-selector';

export type CircuitState = 'closed' | 'open' | 'half_open';

export interface CircuitBreakerOptions {
  /** Consecutive retryable failures that open the circuit. Default 5. */
  failureThreshold?: number;
  /** How long an open circuit refuses calls before one trial. Default 30 s. */
  cooldownMs?: number;
  now?: () => number;
}

interface Entry {
  failures: number;
  /** Set while open: no call before this time. */
  openUntil?: number;
  /** Set while a half-open trial is out; a trial with no outcome after a cool-down frees the slot again. */
  trialSince?: number;
}

/**
 * Per-channel breaker, in process memory (each worker process learns on its own; that is enough to stop hammering
 * a dead channel). Feed it the outcomes of submits only — whether the channel accepts new work — and of those
 * only retryable failures: a final error (bad request, moderation) says nothing about the channel's health. After
 * the cool-down one trial submit goes through (half-open); its success closes the circuit, its failure re-opens it.
 */
export class CircuitBreaker implements ChannelGate {
  private readonly entries = new Map<string, Entry>();
  private readonly threshold: number;
  private readonly cooldownMs: number;
  private readonly now: () => number;

  constructor(opts: CircuitBreakerOptions = {}) {
    this.threshold = Math.max(1, opts.failureThreshold ?? 5);
    this.cooldownMs = Math.max(0, opts.cooldownMs ?? 30_000);
    this.now = opts.now ?? Date.now;
  }

  state(id: string): CircuitState {
    const e = this.entries.get(id);
    if (!e || e.openUntil === undefined) return 'closed';
    return this.now() < e.openUntil ? 'open' : 'half_open';
  }

  isAvailable(id: string): boolean {
    const s = this.state(id);
    if (s === 'closed') return true;
    if (s === 'open') return false;
    return !this.trialOut(this.entries.get(id)!);
  }

  tryAcquire(id: string): boolean {
    if (!this.isAvailable(id)) return false;
    const e = this.entries.get(id);
    if (e && this.state(id) === 'half_open') e.trialSince = this.now();
    return true;
  }

  recordSuccess(id: string): void {
    this.entries.delete(id);
  }

  recordFailure(id: string): void {
    const e = this.entries.get(id) ?? { failures: 0 };
    e.failures += 1;
    const wasTrial = e.openUntil !== undefined;
    if (wasTrial || e.failures >= this.threshold) {
      e.openUntil = this.now() + this.cooldownMs;
      e.trialSince = undefined;
    }
    this.entries.set(id, e);
  }

  private trialOut(e: Entry): boolean {
    return e.trialSince !== undefined && this.now() - e.trialSince < this.cooldownMs;
  }
}
