import { UpstreamError } from '@gmg/errors';
import type { UpstreamPoll } from '../../adapter';
import { type Json, isObj } from '../../json-value';

/** Every `task_status` Kling documents (commonInfo / OmniVideo "Query Task": submitted, processing, succeed, failed). */
const KLING_STATUSES = ['submitted', 'processing', 'succeed', 'failed'] as const;
type KlingStatus = (typeof KLING_STATUSES)[number];
const isKlingStatus = (s: string): s is KlingStatus => (KLING_STATUSES as readonly string[]).includes(s);

/** Kling's failure messages that are its content review (guess: Kling documents no machine word for it on a task). */
const MODERATION_MSG = /risk|sensitive|content (security|polic)|violat|audit|moderat/i;

/**
 * `data` of a `GET {path}/{task_id}` answer (code 0) as our poll. Kling reports no progress: `processing` is shown
 * as half done. An unknown word is still running (the task's own deadline bounds it).
 */
export function mapKlingTask(data: unknown, describe: string): UpstreamPoll {
  if (!isObj(data) || typeof data.task_status !== 'string') throw new UpstreamError(`${describe}: answer without data.task_status`, true, undefined, 'server');
  const word = data.task_status;
  if (!isKlingStatus(word)) return { status: 'processing', progress: 50 };
  switch (word) {
    case 'submitted':
      return { status: 'pending', progress: 0 };
    case 'processing':
      return { status: 'processing', progress: 50 };
    case 'succeed':
      return succeeded(data, describe);
    case 'failed': {
      // Kling's own words stay with the vendor, except that a content refusal is said to be one (final, refunded).
      const msg = typeof data.task_status_msg === 'string' ? data.task_status_msg : '';
      if (MODERATION_MSG.test(msg))
        return { status: 'failed', progress: 0, error: { message: 'Content moderation: the upstream refused the content', moderation: true } };
      return { status: 'failed', progress: 0, error: { message: 'Generation failed' } };
    }
    default: {
      const never: never = word;
      return never;
    }
  }
}

/** `task_result.videos[0].url` (kept 30 days by Kling; the gateway keeps its own copy: UpstreamPoll.media). */
function succeeded(data: Json, describe: string): UpstreamPoll {
  const result = isObj(data.task_result) ? data.task_result : {};
  const files = Array.isArray(result.videos) ? result.videos : [];
  const first: unknown = files[0];
  const url = isObj(first) ? first.url : undefined;
  if (typeof url !== 'string' || !/^https?:\/\//i.test(url) || url.length > 4096) {
    throw new UpstreamError(`${describe}: succeed without a task_result.videos[0].url`, true, undefined, 'server');
  }
  const seconds = isObj(first) ? Number(first.duration) : NaN;
  return {
    status: 'completed',
    progress: 100,
    media: [{ kind: 'video', source: { url }, ...(Number.isFinite(seconds) && seconds > 0 ? { durationSeconds: seconds } : {}) }],
  };
}
