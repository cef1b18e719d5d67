import { TASK_FAILURE_TYPES } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import type { UpstreamPoll } from '../../adapter';
import { type Json, isObj } from '../../json-value';

/** Every `status` of `GET /v1/tasks/{id}` (runwayml/sdk-node src/resources/tasks.ts, TaskRetrieveResponse). */
const RUNWAY_STATUSES = ['PENDING', 'THROTTLED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
type RunwayStatus = (typeof RUNWAY_STATUSES)[number];
const isRunwayStatus = (s: string): s is RunwayStatus => (RUNWAY_STATUSES as readonly string[]).includes(s);

/** `progress` of a RUNNING task: a fraction 0..1 (Runway); capped at 99 until SUCCEEDED. */
function progressOf(v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) return 0;
  return Math.min(99, Math.round(v <= 1 ? v * 100 : v));
}

/** One answer of `GET /v1/tasks/{id}` as our poll: every documented word mapped, an unknown one is still running. */
export function mapRunwayTask(body: unknown, describe: string): UpstreamPoll {
  if (!isObj(body) || typeof body.status !== 'string') throw new UpstreamError(`${describe}: answer without a status`, true, undefined, 'server');
  const word = body.status;
  const progress = progressOf(body.progress);
  // An unknown word: still running; the task's own deadline bounds it (CONVENTIONS "Status words are exhaustive").
  if (!isRunwayStatus(word)) return { status: 'processing', progress };
  switch (word) {
    case 'PENDING':
    case 'THROTTLED':
      // THROTTLED: queued behind the organisation's concurrency limit (Runway starts it when a slot frees).
      return { status: 'pending', progress: 0 };
    case 'RUNNING':
      return { status: 'processing', progress };
    case 'SUCCEEDED':
      return succeeded(body, describe);
    case 'FAILED':
      return failed(body);
    case 'CANCELLED':
      // Cancelled or deleted at Runway, not by our cancel route (which ends our task without polling again).
      return { status: 'failed', progress, error: { message: 'Generation failed: the upstream task was cancelled', type: TASK_FAILURE_TYPES.upstream } };
    default: {
      const never: never = word;
      return never;
    }
  }
}

/**
 * `failureCode` `SAFETY.INPUT.*` / `SAFETY.OUTPUT.*` is content moderation (docs.dev.runwayml.com/errors/task-failures:
 * "you should not retry these generations"); any other code or none is a neutral failure. Runway's own `failure`
 * text stays with the vendor ("we do not recommend returning this to users directly").
 */
function failed(body: Json): UpstreamPoll {
  const code = typeof body.failureCode === 'string' ? body.failureCode : '';
  if (code.startsWith('SAFETY.')) return { status: 'failed', progress: 0, error: { message: 'Banned prompt detected', moderation: true } };
  return { status: 'failed', progress: 0, error: { message: 'Generation failed' } };
}

/** `output[]`: signed links that expire within 24–48 hours (Runway), so the gateway keeps every file. */
function succeeded(body: Json, describe: string): UpstreamPoll {
  const output = Array.isArray(body.output) ? body.output : [];
  const urls = output.filter((u): u is string => typeof u === 'string' && /^https?:\/\//i.test(u) && u.length <= 4096);
  if (urls.length === 0 || urls.length !== output.length) {
    // SUCCEEDED without usable links: a vendor hiccup; the poll is retried (bounded by the step machine's failure count).
    throw new UpstreamError(`${describe}: SUCCEEDED without usable output links`, true, undefined, 'server');
  }
  return { status: 'completed', progress: 100, media: urls.map((url) => ({ kind: 'video', source: { url } })) };
}
