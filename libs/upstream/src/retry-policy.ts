export interface BackoffOptions {
  /** Delay of the first retry. Default 1 s. */
  baseMs?: number;
  /** Upper bound. Default 60 s. */
  maxMs?: number;
  /** Injectable for tests; returns [0, 1). */
  random?: () => number;
}

/**
 * Exponential backoff with "equal jitter": half the exponential step fixed, half random, so retries of many tasks
 * after one upstream outage spread out instead of arriving together. `attempt` counts from 1.
 */
export function backoffDelayMs(attempt: number, opts: BackoffOptions = {}): number {
  const base = opts.baseMs ?? 1000;
  const max = opts.maxMs ?? 60_000;
  const random = opts.random ?? Math.random;
  const step = Math.min(max, base * 2 ** Math.max(0, Math.min(30, attempt - 1)));
  return Math.round(step / 2 + random() * (step / 2));
}
