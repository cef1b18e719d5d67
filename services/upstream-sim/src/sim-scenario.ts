import type { ExpectedOutput, TaskStatus } from '@gmg/contracts';

/** How a simulated task ends, chosen by a marker in the prompt. */
export type SimOutcome = 'success' | 'fail' | 'moderation' | 'never';

export interface SimMarkers {
  outcome: SimOutcome;
  /** `[sim:slow]`: ten times longer. */
  slow: boolean;
  /** `[sim:error503]`: every submit answers 503; `[sim:error503once]`: only the first one per idempotency key. */
  submit503?: 'always' | 'once';
  /** `[sim:partial]`: completes with less than billed (half the images, at least one; a video half as long). */
  partial?: boolean;
}

export const SIM_FAIL_MESSAGE = 'Generation failed (simulated)';
export const SIM_MODERATION_MESSAGE = 'Banned prompt detected';

export function parseMarkers(prompt: unknown): SimMarkers {
  const p = typeof prompt === 'string' ? prompt : '';
  const outcome: SimOutcome = p.includes('[sim:moderation]')
    ? 'moderation'
    : p.includes('[sim:fail]')
      ? 'fail'
      : p.includes('[sim:never]')
        ? 'never'
        : 'success';
  const submit503 = p.includes('[sim:error503once]') ? 'once' : p.includes('[sim:error503]') ? 'always' : undefined;
  return { outcome, slow: p.includes('[sim:slow]'), ...(submit503 ? { submit503 } : {}), ...(p.includes('[sim:partial]') ? { partial: true } : {}) };
}

/** What a `[sim:partial]` task delivers: half the images (at least one), a video half as long (at least 1 s). */
export function deliveredOutput(expected: ExpectedOutput, markers: SimMarkers): ExpectedOutput {
  if (!markers.partial) return expected;
  if (expected.kind === 'images') return { ...expected, count: Math.max(1, Math.floor(expected.count / 2)) };
  if (expected.kind === 'videos' && expected.durationSeconds) {
    return { ...expected, durationSeconds: Math.max(1, Math.floor(expected.durationSeconds / 2)) };
  }
  return expected;
}

/**
 * Base duration at time scale 1. Real models take 10 s to minutes (contract.estimatedSeconds); the simulator
 * compresses that so demos and load tests stay quick while keeping the ordering: images 2-3 s (2 s plus 1 s per
 * estimated minute, capped), videos 6-10 s (6 s plus 1 s per 75 estimated seconds, capped), anything else 2 s.
 */
export function baseDurationMs(kind: ExpectedOutput['kind'], estimatedSeconds = 0): number {
  const est = Math.max(0, estimatedSeconds);
  if (kind === 'images') return 2000 + Math.min(1000, (est / 60) * 1000);
  if (kind === 'videos') return 6000 + Math.min(4000, (est / 75) * 1000);
  return 2000;
}

export function durationMs(kind: ExpectedOutput['kind'], estimatedSeconds: number | undefined, markers: SimMarkers, timeScale: number): number {
  return Math.round(baseDurationMs(kind, estimatedSeconds) * (markers.slow ? 10 : 1) * timeScale);
}

/** Share of the duration spent `pending` before processing starts. */
export const PENDING_SHARE = 0.15;
/** Moderation refuses early (before rendering), a plain failure happens late. */
const FAIL_AT = { moderation: 0.3, fail: 0.7 } as const;

export interface SimState {
  status: TaskStatus;
  progress: number;
  /** When the task reached its terminal state (ms), if it did. */
  endedAt?: number;
}

/** The state of a task at `now`: a pure function of its start, duration and outcome, so nothing needs timers. */
export function stateAt(t: { startedAt: number; durationMs: number; outcome: SimOutcome }, now: number): SimState {
  const d = Math.max(1, t.durationMs);
  const elapsed = Math.max(0, now - t.startedAt);
  if (t.outcome === 'fail' || t.outcome === 'moderation') {
    const end = Math.round(d * FAIL_AT[t.outcome]);
    if (elapsed >= end) return { status: 'failed', progress: progressAt(end, d), endedAt: t.startedAt + end };
  } else if (t.outcome === 'success' && elapsed >= d) {
    return { status: 'completed', progress: 100, endedAt: t.startedAt + d };
  }
  if (elapsed < d * PENDING_SHARE) return { status: 'pending', progress: 0 };
  if (t.outcome === 'never') {
    // Rises like a real task, then creeps towards 95 and stays there.
    const x = (elapsed - d * PENDING_SHARE) / (d * (1 - PENDING_SHARE));
    return { status: 'processing', progress: Math.max(1, Math.floor(95 * (1 - Math.exp(-2 * x)))) };
  }
  return { status: 'processing', progress: Math.max(1, progressAt(elapsed, d)) };
}

function progressAt(elapsed: number, d: number): number {
  const x = (elapsed - d * PENDING_SHARE) / (d * (1 - PENDING_SHARE));
  return Math.max(0, Math.min(99, Math.round(99 * x)));
}
