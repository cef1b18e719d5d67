import { TASK_FAILURE_TYPES } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import type { UpstreamPoll } from '../../adapter';
import { readCommonError, type VendorErrorReader } from '../../vendor-call';
import { type Json, isObj } from '../../json-value';

/**
 * Every `output.task_status` of `GET /api/v1/tasks/{task_id}` Model Studio documents (image-to-video API reference,
 * "Step 2: Query the result"): PENDING, RUNNING, SUCCEEDED, FAILED, CANCELED, UNKNOWN (the task does not exist or
 * its status is unknown, e.g. a task_id older than its 24 hours).
 */
const DASHSCOPE_STATUSES = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED', 'UNKNOWN'] as const;
type DashScopeStatus = (typeof DASHSCOPE_STATUSES)[number];
const isStatus = (s: string): s is DashScopeStatus => (DASHSCOPE_STATUSES as readonly string[]).includes(s);

/** Model Studio's content-moderation codes (error-code page): the input or the output failed its inspection, or may infringe. */
const MODERATION_CODES = /^(DataInspectionFailed|IPInfringementSuspect|DataInspection\.|Inappropriate)/;

/**
 * `{code, message, request_id}`, Model Studio's error body: its moderation codes read as a moderation type (final, no
 * failover), the rest as the common reader reads them (`Throttling*` by its 429, `InvalidApiKey` by its 401).
 */
export const readDashScopeError: VendorErrorReader = (body) => {
  const e = readCommonError(body);
  return e.type !== undefined && MODERATION_CODES.test(e.type) ? { ...e, code: e.type, type: 'moderation' } : e;
};

export interface DashScopePollContext {
  describe: string;
  /** UNKNOWN while this is true reads as still pending (a task not yet visible where it is queried). */
  young: boolean;
}

/** One answer of `GET /api/v1/tasks/{id}` as our poll: every documented word mapped, an unknown one is still running. */
export function mapDashScopeTask(body: unknown, ctx: DashScopePollContext): UpstreamPoll {
  const output = isObj(body) && isObj(body.output) ? body.output : undefined;
  if (!output || typeof output.task_status !== 'string')
    throw new UpstreamError(`${ctx.describe}: answer without output.task_status`, true, undefined, 'server');
  const word = output.task_status;
  // Model Studio reports no progress for video tasks: RUNNING shows half-way, as the replicate adapter does.
  if (!isStatus(word)) return { status: 'processing', progress: 50 };
  switch (word) {
    case 'PENDING':
      return { status: 'pending', progress: 0 };
    case 'RUNNING':
      return { status: 'processing', progress: 50 };
    case 'SUCCEEDED':
      return succeeded(output, ctx.describe);
    case 'FAILED':
      return failed(output);
    case 'CANCELED':
      return { status: 'failed', progress: 0, error: { message: 'Generation failed: the upstream task was cancelled', type: TASK_FAILURE_TYPES.upstream } };
    case 'UNKNOWN':
      if (ctx.young) return { status: 'pending', progress: 0 };
      return { status: 'failed', progress: 0, error: { message: 'Generation failed: the upstream task was not found', type: TASK_FAILURE_TYPES.upstream } };
    default: {
      const never: never = word;
      return never;
    }
  }
}

/** A FAILED task carries `output.code` / `output.message`: a moderation code is a moderation, anything else the neutral word. */
function failed(output: Json): UpstreamPoll {
  const code = typeof output.code === 'string' ? output.code : '';
  if (MODERATION_CODES.test(code)) return { status: 'failed', progress: 0, error: { message: 'Content moderated', moderation: true } };
  // The vendor's own message stays with the vendor: the client sees the neutral word (the step machine passes it on).
  return { status: 'failed', progress: 0, error: { message: 'Generation failed' } };
}

/** `output.video_url`: valid for 24 hours (Model Studio), so the gateway keeps the file (UpstreamPoll.media). */
function succeeded(output: Json, describe: string): UpstreamPoll {
  const url = output.video_url;
  if (typeof url !== 'string' || !/^https?:\/\//i.test(url) || url.length > 4096) {
    // SUCCEEDED without a link: a vendor hiccup; the poll is retried (bounded by the step machine's failure count).
    throw new UpstreamError(`${describe}: SUCCEEDED without an output.video_url`, true, undefined, 'server');
  }
  return { status: 'completed', progress: 100, media: [{ kind: 'video', source: { url } }] };
}
