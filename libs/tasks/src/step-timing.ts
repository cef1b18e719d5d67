import { requestContract, resolveModel, type NormalizedRequest } from '@gmg/contracts';

/** Used when a model has no contract (or an unknown model): a typical render cadence. */
export const DEFAULT_POLL_INTERVAL_MS = Object.freeze({ min: 2000, max: 5000 });
/** No delay below this: a tiny scale in tests must not turn polling into a busy loop. */
export const MIN_STEP_DELAY_MS = 50;

export interface StepTiming {
  /** Multiplies poll intervals and retry backoffs (POLL_INTERVAL_SCALE); 1 in production, small in tests. */
  scale: number;
  /** Injectable for tests; returns [0, 1). */
  random?: () => number;
}

const scaled = (ms: number, scale: number): number => Math.max(MIN_STEP_DELAY_MS, Math.round(ms * scale));

/** Next poll delay: uniform in the model's [min, max] poll interval, times the scale. */
export function pollDelayMs(model: string, t: StepTiming, request?: Pick<NormalizedRequest, 'model' | 'derived'>): number {
  // `request` (optional): a model with one contract per action polls at its action's cadence
  const range = (request ? requestContract(request) : resolveModel(model)?.contract)?.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const min = Math.max(0, Math.min(range.min, range.max));
  const max = Math.max(range.min, range.max);
  const r = (t.random ?? Math.random)();
  return scaled(min + r * (max - min), t.scale);
}

/**
 * Retry delay after the `attempt`-th failure (from 1): exponential with equal jitter, capped, times the scale.
 * Jitter spreads the retries of many tasks hit by the same outage.
 */
export function retryDelayMs(attempt: number, t: StepTiming & { baseMs: number; maxMs: number }): number {
  const step = Math.min(t.maxMs, t.baseMs * 2 ** Math.max(0, Math.min(30, attempt - 1)));
  const r = (t.random ?? Math.random)();
  return scaled(step / 2 + r * (step / 2), t.scale);
}
