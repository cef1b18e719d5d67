import { TaskFailedError, WaitTimeoutError } from './errors.js';
import { sleep } from './http.js';
import type { Task } from './types.js';

export interface WaitOptions {
  /** Stops waiting (rejects with the signal's reason); the task itself goes on. */
  signal?: AbortSignal;
  /** Gives up after this long with a WaitTimeoutError (default 30 minutes, the gateway's own task timeout). */
  timeoutMs?: number;
  /** Called with the task after every poll. */
  onProgress?: (task: Task) => void;
  /** Shortest pause between polls (default 1000 ms). */
  minIntervalMs?: number;
  /** Longest pause between polls (default 15000 ms). */
  maxIntervalMs?: number;
  /** The clock `timeoutMs` and the poll schedule are measured on, in ms (default `Date.now`; a simulation or a test moves its own). */
  now?: () => number;
}

export interface PollDelayInput {
  /** The task's `estimated_time` (seconds), when the gateway gave one. */
  estimatedSeconds?: number;
  /** Since the wait began. */
  elapsedMs: number;
  /** The previous pause (0 before the first). */
  previousMs: number;
  minMs: number;
  maxMs: number;
}

const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v));

/**
 * The pause before the next poll. While the task is within its `estimated_time`, poll about eight times over that
 * estimate (a 20 s image every 2.5 s, a 4-minute video every 15 s at most); once past it, back off by 1.5× per
 * poll, so a slow task costs few requests. Without an estimate: start at the minimum and back off.
 */
export function nextPollDelay(p: PollDelayInput): number {
  const est = p.estimatedSeconds !== undefined && p.estimatedSeconds > 0 ? p.estimatedSeconds * 1000 : undefined;
  if (est !== undefined && p.elapsedMs < est) {
    const step = clamp(est / 8, p.minMs, p.maxMs);
    // do not sleep far past the estimate: the task is most likely done right around it
    return clamp(Math.min(step, est - p.elapsedMs + p.minMs), p.minMs, p.maxMs);
  }
  return p.previousMs ? clamp(p.previousMs * 1.5, p.minMs, p.maxMs) : p.minMs;
}

const TERMINAL = new Set(['completed', 'failed']);

/**
 * Polls `get` until the task is terminal: resolves with a completed task, rejects with TaskFailedError for a failed
 * one (its `error` and `task` attached), WaitTimeoutError past `timeoutMs`, or the signal's reason when aborted.
 */
export async function waitForTask(get: (id: string, signal?: AbortSignal) => Promise<Task>, id: string, opts: WaitOptions = {}): Promise<Task> {
  const now = opts.now ?? Date.now;
  const started = now();
  const timeoutMs = opts.timeoutMs ?? 30 * 60_000;
  const minMs = opts.minIntervalMs ?? 1000;
  const maxMs = Math.max(minMs, opts.maxIntervalMs ?? 15_000);
  let previousMs = 0;
  let last: Task | undefined;
  for (;;) {
    opts.signal?.throwIfAborted();
    last = await get(id, opts.signal);
    opts.onProgress?.(last);
    if (TERMINAL.has(last.status)) {
      if (last.status === 'failed') throw new TaskFailedError(id, last.error, last);
      return last;
    }
    const elapsedMs = now() - started;
    const left = timeoutMs - elapsedMs;
    if (left <= 0) throw new WaitTimeoutError(id, timeoutMs, last);
    previousMs = nextPollDelay({ estimatedSeconds: last.estimated_time, elapsedMs, previousMs, minMs, maxMs });
    await sleep(Math.min(previousMs, left), opts.signal);
  }
}
