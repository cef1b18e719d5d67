import { UpstreamError } from '@gmg/errors';
import type { UpstreamMedia, UpstreamPoll } from '../../adapter';
import { isModerationFailure, truncate } from '../../upstream-failure';
import type { UpstreamAnswer } from '../../upstream-http';
import type { VendorErrorReader } from '../../vendor-call';
import { type Json, isObj, str } from '../../json-value';

/**
 * An operation's name as the submit answers it (`models/{model}/operations/{id}`; resellers answer `operations/{id}`),
 * bounded: it becomes a path under `/v1beta/`, so nothing else (no `..`, no query) may pass.
 */
const OPERATION_NAME = /^(models\/[A-Za-z0-9][A-Za-z0-9._-]{0,99}\/)?operations\/[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

export function operationNameOf(body: unknown, describe: string): string {
  const name = isObj(body) ? body.name : undefined;
  // Final: the operation may exist without a name we can follow, and the API has no idempotency key to find it again.
  if (typeof name !== 'string' || !OPERATION_NAME.test(name))
    throw new UpstreamError(`${describe}: answer without a usable operation name`, false, undefined, 'server');
  return name;
}

/** A stored id that is not an operation name: no poll can find that task (final). */
export function checkOperationName(name: string): string {
  if (!OPERATION_NAME.test(name)) throw new UpstreamError('gemini: the upstream task id is not a Gemini operation name', false, undefined, 'not_found');
  return name;
}

/**
 * Google's error body `{error: {code, message, status, details}}` (AIP-193): `status` is the machine word
 * (`INVALID_ARGUMENT`, `RESOURCE_EXHAUSTED`, `PERMISSION_DENIED`…), `details[].reason` the finer one (ErrorInfo).
 */
export const readGoogleError: VendorErrorReader = (body) => {
  const e = isObj(body) && isObj(body.error) ? body.error : undefined;
  if (!e) return { message: typeof body === 'string' ? body.slice(0, 300) : undefined };
  return { type: str(e.status), code: errorInfo(e, 'reason'), message: str(e.message) };
};

/** A field of the first `details[]` entry of `@type` ErrorInfo or RetryInfo that has it. */
function errorInfo(e: Json, key: 'reason' | 'retryDelay'): string | undefined {
  const details = Array.isArray(e.details) ? e.details : [];
  for (const d of details) if (isObj(d) && typeof d[key] === 'string') return d[key];
  return undefined;
}

/**
 * Google's answer in the words the shared classifier reads: a key Google does not know is `400 INVALID_ARGUMENT`
 * with reason `API_KEY_INVALID` — a fault of the channel, not of the request, so it reads as 401 (fail over);
 * a 429's `RetryInfo.retryDelay` (`"7s"`, `"0.5s"`) stands in for the Retry-After header Google does not send.
 */
export function normalizeGoogleAnswer(res: UpstreamAnswer): UpstreamAnswer {
  const e = isObj(res.data) && isObj(res.data.error) ? res.data.error : undefined;
  if (!e || res.status < 400) return res;
  if (res.status === 400 && errorInfo(e, 'reason') === 'API_KEY_INVALID') return { ...res, status: 401 };
  if (res.status === 429 && res.retryAfter === undefined) {
    const m = /^(\d{1,5}(?:\.\d{1,9})?)s$/.exec(errorInfo(e, 'retryDelay') ?? '');
    if (m) return { ...res, retryAfter: String(Math.ceil(Number(m[1]))) };
  }
  return res;
}

/** Google's own API hosts (`generativelanguage.googleapis.com`, the file download host): the key may go there on https. */
const GOOGLE_API_HOST = /(^|\.)googleapis\.com$/i;

/**
 * The download link of a finished video, with the key if the link is on a host the key may go to: the channel's own
 * origin (a proxy, the simulator) or https on googleapis.com. Any other host is a final failure: an answer is no
 * reason to hand our key to a third host, and without it Google's file link does not download.
 */
export function keyedVideoSource(baseUrl: string, uri: string, headers: Record<string, string>, describe: string): UpstreamMedia['source'] {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new UpstreamError(`${describe}: the video uri is not a URL`, false, undefined, 'server');
  }
  const sameOrigin = url.origin === new URL(baseUrl).origin;
  if (!sameOrigin && !(url.protocol === 'https:' && GOOGLE_API_HOST.test(url.hostname))) {
    throw new UpstreamError(`${describe}: the video uri host ${url.host.slice(0, 100)} is neither the channel's nor Google's`, false, undefined, 'server');
  }
  return { url: url.href, headers };
}

export interface OperationContext {
  describe: string;
  baseUrl: string;
  /** What the download of a video needs (the channel's key header). */
  downloadHeaders: Record<string, string>;
}

/**
 * One answer of `GET /v1beta/{name}` (a google.longrunning.Operation) as our poll. There are no status words: not
 * `done` is running (no progress is reported); `done` with `error` failed; `done` with videos completed; `done`
 * with none and `raiMediaFilteredCount` > 0 was filtered by Google's responsible-AI checks (moderation).
 */
export function mapOperation(body: unknown, ctx: OperationContext): UpstreamPoll {
  if (!isObj(body)) throw new UpstreamError(`${ctx.describe}: answer without an operation`, true, undefined, 'server');
  if (isObj(body.error)) return failed(body.error);
  if (body.done !== true) return { status: 'processing', progress: 0 };
  const answer = isObj(body.response) && isObj(body.response.generateVideoResponse) ? body.response.generateVideoResponse : {};
  const samples = Array.isArray(answer.generatedSamples) ? answer.generatedSamples : [];
  const uris = samples.map((s) => (isObj(s) && isObj(s.video) ? str(s.video.uri) : undefined)).filter((u): u is string => u !== undefined && u.length <= 4096);
  if (uris.length > 0) {
    return {
      status: 'completed',
      progress: 100,
      media: uris.map((u) => ({ kind: 'video', source: keyedVideoSource(ctx.baseUrl, u, ctx.downloadHeaders, ctx.describe) })),
    };
  }
  if (Number(answer.raiMediaFilteredCount) > 0) {
    const reasons = Array.isArray(answer.raiMediaFilteredReasons) ? answer.raiMediaFilteredReasons.filter((r) => typeof r === 'string') : [];
    const why = reasons.length ? `: ${truncate(reasons.join('; '), 500)}` : '';
    return { status: 'failed', progress: 0, error: { message: `The video was blocked by the vendor's safety filters${why}`, moderation: true } };
  }
  // Done with neither videos nor a filter count: a vendor hiccup; retried (bounded by the step machine's failure count).
  throw new UpstreamError(`${ctx.describe}: done without a video`, true, undefined, 'server');
}

/** How Google words a prompt its safety checks refused (guess: from reported messages, not a documented list). */
const GOOGLE_SAFETY = /usage guidelines|responsible ai|\bRAI\b|sensitive words/i;

/**
 * `error` of a done operation: a google.rpc.Status (`code` the numeric google.rpc.Code, `message` its text). Its
 * message is the client's (as the openai protocol's); a safety refusal of the prompt reads as moderation.
 */
function failed(e: Json): UpstreamPoll {
  const message = truncate(str(e.message) ?? 'Video generation failed', 1000);
  return { status: 'failed', progress: 0, error: { message, moderation: isModerationFailure(undefined, message) || GOOGLE_SAFETY.test(message) } };
}
