import { TASK_FAILURE_TYPES } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import type { UpstreamPoll } from '../../adapter';
import { type Json, isObj } from '../../json-value';

/**
 * Every status word of `GET polling_url` BFL documents (help.bfl.ai "Why did my request fail?": Ready, Pending,
 * Request Moderated, Content Moderated, Task not found, Error).
 */
const BFL_STATUSES = ['Pending', 'Ready', 'Request Moderated', 'Content Moderated', 'Task not found', 'Error'] as const;
type BflStatus = (typeof BFL_STATUSES)[number];
const isBflStatus = (s: string): s is BflStatus => (BFL_STATUSES as readonly string[]).includes(s);

/**
 * `progress`: BFL reports a fraction 0..1 (ComfyUI's BFL status model, the Comfy router's BFL schema); a value above 1
 * is read as a percentage. Capped at 99 until Ready.
 */
function progressOf(v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) return 0;
  return Math.min(99, Math.round(v <= 1 ? v * 100 : v));
}

export interface BflPollContext {
  describe: string;
  /** `Task not found` while this is true reads as still pending (a task BFL has not made visible yet). */
  young: boolean;
}

/** One answer of `GET polling_url` as our poll: every documented word mapped, an unknown one is still running. */
export function mapBflResult(body: unknown, ctx: BflPollContext): UpstreamPoll {
  if (!isObj(body) || typeof body.status !== 'string') throw new UpstreamError(`${ctx.describe}: answer without a status`, true, undefined, 'server');
  const word = body.status;
  const progress = progressOf(body.progress);
  // An unknown word: still running; the task's own deadline bounds it (docs/upstreams.md "Status words").
  if (!isBflStatus(word)) return { status: 'processing', progress };
  switch (word) {
    case 'Pending':
      return { status: progress > 0 ? 'processing' : 'pending', progress };
    case 'Ready':
      return ready(body, ctx.describe);
    case 'Request Moderated':
    case 'Content Moderated':
      return { status: 'failed', progress, error: { message: word, moderation: true } };
    case 'Error':
      // BFL's own details stay with the vendor: the client sees the neutral word (the step machine passes it on).
      return { status: 'failed', progress, error: { message: 'Generation failed' } };
    case 'Task not found':
      if (ctx.young) return { status: 'pending', progress: 0 };
      return { status: 'failed', progress, error: { message: 'Generation failed: the upstream task was not found', type: TASK_FAILURE_TYPES.upstream } };
    default: {
      const never: never = word;
      return never;
    }
  }
}

/** `result.sample`: a signed link that lives 10 minutes (BFL), so the gateway keeps the file (UpstreamPoll.media). */
function ready(body: Json, describe: string): UpstreamPoll {
  const sample = isObj(body.result) ? body.result.sample : undefined;
  if (typeof sample !== 'string' || !/^https?:\/\//i.test(sample) || sample.length > 4096) {
    // Ready without a link: a vendor hiccup; the poll is retried (bounded by the step machine's failure count).
    throw new UpstreamError(`${describe}: Ready without a result.sample link`, true, undefined, 'server');
  }
  return { status: 'completed', progress: 100, media: [{ kind: 'image', source: { url: sample } }] };
}
