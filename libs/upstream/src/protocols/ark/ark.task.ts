import { TASK_FAILURE_TYPES, type NormalizedRequest } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import type { UpstreamMedia, UpstreamPoll } from '../../adapter';
import { isModerationFailure, truncate } from '../../upstream-failure';
import { readCommonError, type VendorErrorReader } from '../../vendor-call';
import { type Json, isObj, sizeOfWxH, str } from '../../json-value';

/**
 * Ark's moderation codes: `InputTextSensitiveContentDetected`, `OutputVideoSensitiveContentDetected`,
 * `InputImageSensitiveContentDetected.PrivacyInformation`, `InputTextRiskDetection`, … (ModelArk error codes).
 */
const ARK_MODERATION = /SensitiveContentDetected|RiskDetection/;
export const isArkModeration = (code: string | undefined, message?: string): boolean =>
  (code !== undefined && ARK_MODERATION.test(code)) || isModerationFailure(code, message);

/**
 * Ark's error body `{error: {code, message, param?, type}}`: `type` is the HTTP class (`BadRequest`, `Unauthorized`,
 * `TooManyRequests`), `code` the reason. A moderation code is read as the moderation type (final, not retried).
 */
export const readArkError: VendorErrorReader = (body) => {
  const e = readCommonError(body);
  const code = isObj(body) && isObj(body.error) ? str(body.error.code) : undefined;
  return isArkModeration(code, e.message) ? { ...e, type: 'content_moderation', code } : { ...e, code };
};

/** Every status word of a content-generation task (ModelArk "Retrieve a video generation task"). */
const ARK_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'expired', 'cancelled'] as const;
type ArkStatus = (typeof ARK_STATUSES)[number];
const isArkStatus = (s: unknown): s is ArkStatus => typeof s === 'string' && (ARK_STATUSES as readonly string[]).includes(s);

/** One answer of `GET …/tasks/{id}` as our poll: every documented word mapped, an unknown one is still running. */
export function mapArkTask(task: unknown, describe: string): UpstreamPoll {
  if (!isObj(task)) throw new UpstreamError(`${describe}: answer without a task object`, true, undefined, 'server');
  // Ark reports no progress: queued is 0, running an honest "started"
  if (!isArkStatus(task.status)) return { status: 'processing', progress: 0 };
  switch (task.status) {
    case 'queued':
      return { status: 'pending', progress: 0 };
    case 'running':
      return { status: 'processing', progress: 0 };
    case 'succeeded':
      return { status: 'completed', progress: 100, media: [videoOf(task, describe)] };
    case 'failed': {
      const e = isObj(task.error) ? task.error : {};
      const code = str(e.code);
      const message = truncate(str(e.message) ?? 'Video generation failed', 1000);
      return { status: 'failed', progress: 0, error: { message, ...(code ? { type: code } : {}), moderation: isArkModeration(code, message) } };
    }
    case 'expired':
      return {
        status: 'failed',
        progress: 0,
        error: { message: 'Generation failed: the upstream task expired before it ran', type: TASK_FAILURE_TYPES.timeout },
      };
    case 'cancelled':
      return { status: 'failed', progress: 0, error: { message: 'Generation failed: the upstream task was cancelled', type: TASK_FAILURE_TYPES.upstream } };
    default: {
      const never: never = task.status;
      return never;
    }
  }
}

/** `content.video_url`: a link valid 24 hours (Ark), no key needed; the gateway keeps the file. */
function videoOf(task: Json, describe: string): UpstreamMedia {
  const url = isObj(task.content) ? task.content.video_url : undefined;
  if (typeof url !== 'string' || !/^https?:\/\//i.test(url) || url.length > 8192) {
    throw new UpstreamError(`${describe}: succeeded without a content.video_url link`, true, undefined, 'server');
  }
  const seconds = Number(task.duration);
  return { kind: 'video', source: { url }, ...(Number.isFinite(seconds) && seconds > 0 ? { durationSeconds: seconds } : {}) };
}

/**
 * `data[]` of a Seedream answer: `{url, size}` or `{b64_json, size}` per image; an item may be `{error: {code,
 * message}}` instead (an image the vendor's output check refused).
 */
export function arkImagesOf(answer: unknown, req: NormalizedRequest): { media: UpstreamMedia[]; refused?: { code?: string; message?: string } } {
  const data = isObj(answer) && Array.isArray(answer.data) ? answer.data.filter(isObj) : [];
  const fallback = req.expected.width && req.expected.height ? { width: req.expected.width, height: req.expected.height } : {};
  const media = data.flatMap((d): UpstreamMedia[] => {
    const dims = sizeOfWxH(d.size) ?? fallback;
    if (typeof d.b64_json === 'string' && d.b64_json) return [{ kind: 'image', source: { base64: d.b64_json }, ...dims }];
    if (typeof d.url === 'string' && /^https?:\/\//i.test(d.url)) return [{ kind: 'image', source: { url: d.url }, ...dims }];
    return [];
  });
  const bad = data.map((d) => d.error).find(isObj);
  return { media, ...(bad ? { refused: { code: str(bad.code), message: str(bad.message) } } : {}) };
}
