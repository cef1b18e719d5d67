import { UpstreamError } from '@gmg/errors';
import type { TaskResult } from '@gmg/contracts';
import type { UpstreamPoll, UpstreamStatus } from './adapter';
import { isModerationFailure, truncate } from './upstream-failure';
import { type Json, str } from './json-value';

/** Where an upstream speaking this API shows an art suite task (spec 2.3). */
export const ARTGEN_NATIVE_PATH = '/v1/artgen';

/** Native states → unified ones; MODAL (waiting for /modal) is still running. */
const NATIVE_STATUS: Record<string, UpstreamStatus> = {
  SUBMITTED: 'pending',
  NOT_START: 'pending',
  IN_PROGRESS: 'processing',
  MODAL: 'processing',
  SUCCESS: 'completed',
  FAILURE: 'failed',
};

/** How long a video link of the art suite is assumed to live (spec 2.2: typically 24 h). */
const VIDEO_LINK_TTL_SECONDS = 24 * 3600;

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && x !== '') : []);

/** `"46%"` → 46 (also a plain number), clamped to 0..100. */
export function parseNativeProgress(v: unknown): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' ? parseFloat(v) : NaN;
  return Number.isFinite(n) ? Math.max(0, Math.min(100, Math.round(n))) : 0;
}

/**
 * The native art suite task (`GET /v1/artgen/<id>`, unwrapped) as an UpstreamPoll. Only known fields, with the
 * types spec 2.3 gives them, are kept in `native`: an upstream may send anything, and its buttons are not ours
 * (their hash is the upstream's), so they are dropped.
 */
export function mapArtgenNative(body: unknown, describe = 'upstream art task'): UpstreamPoll {
  const t: Json = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Json) : {};
  const nativeStatus = typeof t.status === 'string' ? t.status.toUpperCase() : '';
  const status = NATIVE_STATUS[nativeStatus];
  if (!status) throw new UpstreamError(`${describe}: unrecognized art task status ${truncate(JSON.stringify(t.status) ?? '', 40)}`, true, undefined, 'server');
  const native: Json = { status: nativeStatus };
  for (const k of ['action', 'prompt', 'description', 'grid_image_url', 'fail_reason'] as const) {
    const v = str(t[k]);
    if (v !== undefined) native[k] = k === 'description' || k === 'prompt' ? truncate(v, 20_000) : v;
  }
  for (const k of ['image_urls', 'video_urls', 'prompts'] as const) if (Array.isArray(t[k])) native[k] = strings(t[k]);
  for (const k of ['width', 'height', 'finish_time'] as const) if (num(t[k]) !== undefined) native[k] = num(t[k]);

  const poll: UpstreamPoll = { status, progress: status === 'completed' ? 100 : parseNativeProgress(t.progress), native };
  if (status === 'completed') poll.result = resultOf(native);
  if (status === 'failed') {
    const message = truncate(str(t.fail_reason) ?? 'Generation failed', 1000);
    poll.error = { message, moderation: isModerationFailure(undefined, message) };
  }
  return poll;
}

function resultOf(n: Json): TaskResult {
  const out: TaskResult = {};
  const size = { ...(typeof n.width === 'number' ? { width: n.width } : {}), ...(typeof n.height === 'number' ? { height: n.height } : {}) };
  const images = strings(n.image_urls);
  if (images.length) out.images = images.map((url) => ({ url, ...(images.length === 1 ? size : {}) }));
  const videos = strings(n.video_urls);
  if (videos.length) {
    const finished = typeof n.finish_time === 'number' ? Math.floor(n.finish_time / 1000) : Math.floor(Date.now() / 1000);
    out.videos = videos.map((url) => ({ url: [url], expires_at: finished + VIDEO_LINK_TTL_SECONDS }));
  }
  if (typeof n.description === 'string') out.text = n.description;
  return out;
}
