import { createHash } from 'node:crypto';
import type { NormalizedRequest } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import {
  commonSettingsProblem,
  type ChannelSettings,
  type ChannelTarget,
  type SubmitOutcome,
  type UpstreamAdapter,
  type UpstreamMedia,
  type UpstreamPoll,
} from '../../adapter';
import { checkTranslation, translateInput, vendorModelOf, type Unsupported } from '../../translation';
import { isModerationFailure, truncate } from '../../upstream-failure';
import type { UpstreamHttp } from '../../upstream-http';
import { callVendor, createVendorHttp, joinUrl, withChannelHeaders } from '../../vendor-call';
import { OPENAI_MEDIA_TRANSLATION as T } from './openai.translation';
import { type Json, isObj, sizeOfWxH } from '../../json-value';

interface OpenAiMediaAdapterOptions {
  /** Per call of the video job (submit, poll, cancel), connect to last byte. */
  timeoutMs: number;
  /** Per synchronous image call: a GPT image at high quality takes about two minutes. Default 5 min. */
  syncTimeoutMs?: number;
  /** Largest image answer accepted (base64 of every image of the call). Default 128 MiB. */
  maxImageResponseBytes?: number;
}

const USER_AGENT = 'gmg-openai-adapter/1';
/** Our id of an image call (the vendor gives none): the task ended at submit, nothing is ever polled by it. */
const IMAGE_ID_PREFIX = 'img_';

/**
 * The OpenAI-compatible media API (OpenAI, Azure-style resellers, peer gateways such as new-api and LiteLLM):
 * images are one synchronous call that answers the finished task at submit (`SubmitOutcome.done`); video is the
 * `/v1/videos` job, polled, its bytes behind the channel's key (the gateway keeps them).
 */
export function createOpenAiMediaAdapter(opts: OpenAiMediaAdapterOptions): UpstreamAdapter {
  const jobs = createVendorHttp({ timeoutMs: opts.timeoutMs, userAgent: USER_AGENT });
  // Its own pool and timeout: a two-minute image call must not hold the polls' sockets, nor live by their timeout.
  const sync = createVendorHttp({
    timeoutMs: opts.syncTimeoutMs ?? 300_000,
    maxResponseBytes: opts.maxImageResponseBytes ?? 128 * 1024 * 1024,
    maxSockets: 16,
    userAgent: USER_AGENT,
  });
  return {
    protocol: 'openai',
    translation: T,
    check: (_ch, req) => checkTranslation(T, req),
    checkSettings,
    submit: (ch, req, ctx) => (req.pool === 'video' ? submitVideo(jobs, ch, req) : submitImages(sync, ch, req, ctx.taskId)),
    async poll(ch, upstreamTaskId) {
      if (upstreamTaskId.startsWith(IMAGE_ID_PREFIX)) {
        return { status: 'failed', progress: 0, error: { message: 'an openai image task ends at submit: there is nothing to poll' } };
      }
      return pollVideo(jobs, ch, upstreamTaskId);
    },
    async cancel(ch, upstreamTaskId) {
      if (upstreamTaskId.startsWith(IMAGE_ID_PREFIX)) return;
      const describe = `upstream ${ch.name} DELETE /v1/videos/${truncate(upstreamTaskId, 80)}`;
      try {
        await callVendor(ch, 'cancel', describe, () => jobs.delete(videoUrl(ch, upstreamTaskId), authHeaders(ch)));
      } catch (e) {
        // 404: gone already; 409: ended already. Nothing left to stop either way.
        if (e instanceof UpstreamError && (e.status === 404 || e.status === 409)) return;
        throw e;
      }
    },
  };
}

/** `auth_header`: `bearer` (default, OpenAI and peer gateways) or `api-key` (Azure-style resellers: `api-key: <key>`). */
function checkSettings(s: Readonly<ChannelSettings>): Unsupported | undefined {
  const common = commonSettingsProblem('openai', s, { options: ['auth_header'] });
  if (common) return common;
  if (s.auth_header !== undefined && s.auth_header !== 'bearer' && s.auth_header !== 'api-key') {
    return { field: 'auth_header', message: '`auth_header` is `bearer` (Authorization: Bearer <key>, the default) or `api-key` (api-key: <key>)' };
  }
  return undefined;
}

const authHeaders = (ch: ChannelTarget): Record<string, string> =>
  withChannelHeaders(ch, ch.settings.auth_header === 'api-key' ? { 'api-key': ch.apiKey } : { Authorization: `Bearer ${ch.apiKey}` });

const vendorBody = (ch: ChannelTarget, req: NormalizedRequest): Json => ({ ...translateInput(T, ch, req), model: vendorModelOf(T, ch, req) });

/** One synchronous call; its answer is the finished task (the step machine keeps the images, base64 or links). */
async function submitImages(client: UpstreamHttp, ch: ChannelTarget, req: NormalizedRequest, taskId: string): Promise<SubmitOutcome> {
  const body = vendorBody(ch, req);
  const path = 'images' in body ? '/v1/images/edits' : '/v1/images/generations';
  const describe = `upstream ${ch.name} POST ${path}`;
  const res = await callVendor(ch, 'submit', describe, () => client.post(joinUrl(ch.baseUrl, path), body, authHeaders(ch)));
  const media = imagesOf(res.data, req);
  // Final: the vendor answered (and likely billed) without images; calling again would pay twice.
  if (media.length === 0) throw new UpstreamError(`${describe}: answer without images`, false, res.status, 'server');
  const created = isObj(res.data) && typeof res.data.created === 'number' ? res.data.created : Math.floor(Date.now() / 1000);
  const upstreamTaskId = `${IMAGE_ID_PREFIX}${created}_${createHash('sha256').update(taskId).digest('hex').slice(0, 10)}`;
  return { upstreamTaskId, done: { status: 'completed', progress: 100, media } };
}

/** `data[]` of an images answer: `b64_json` (GPT image models, always) or `url` (dall-e's default, 60-minute links). */
function imagesOf(answer: unknown, req: NormalizedRequest): UpstreamMedia[] {
  if (!isObj(answer) || !Array.isArray(answer.data)) return [];
  const dims = sizeOfWxH(answer.size) ?? (req.expected.width && req.expected.height ? { width: req.expected.width, height: req.expected.height } : {});
  return answer.data.filter(isObj).flatMap((d): UpstreamMedia[] => {
    if (typeof d.b64_json === 'string' && d.b64_json) return [{ kind: 'image', source: { base64: d.b64_json }, ...dims }];
    if (typeof d.url === 'string' && d.url) return [{ kind: 'image', source: { url: d.url }, ...dims }];
    return [];
  });
}

const videoUrl = (ch: ChannelTarget, id: string, tail = ''): string => joinUrl(ch.baseUrl, `/v1/videos/${encodeURIComponent(id)}${tail}`);

async function submitVideo(client: UpstreamHttp, ch: ChannelTarget, req: NormalizedRequest): Promise<SubmitOutcome> {
  const describe = `upstream ${ch.name} POST /v1/videos`;
  const res = await callVendor(ch, 'submit', describe, () => client.post(joinUrl(ch.baseUrl, '/v1/videos'), vendorBody(ch, req), authHeaders(ch)));
  const id = isObj(res.data) && typeof res.data.id === 'string' ? res.data.id : '';
  // Final: the job may exist without us knowing its id; the API has no idempotency key to find it again.
  if (!id) throw new UpstreamError(`${describe}: answer without a video id`, false, res.status, 'server');
  return { upstreamTaskId: id };
}

async function pollVideo(client: UpstreamHttp, ch: ChannelTarget, id: string): Promise<UpstreamPoll> {
  const describe = `upstream ${ch.name} GET /v1/videos/${truncate(id, 80)}`;
  const res = await callVendor(ch, 'poll', describe, () => client.get(videoUrl(ch, id), authHeaders(ch)));
  if (!isObj(res.data)) throw new UpstreamError(`${describe}: answer without a video object`, true, res.status, 'server');
  return mapVideo(ch, id, res.data);
}

/** The Video object's documented statuses (openai-node videos.ts `Video.status`). */
type VideoStatus = 'queued' | 'in_progress' | 'completed' | 'failed';
const VIDEO_STATUSES: readonly string[] = ['queued', 'in_progress', 'completed', 'failed'] satisfies VideoStatus[];
const isVideoStatus = (s: unknown): s is VideoStatus => typeof s === 'string' && VIDEO_STATUSES.includes(s);

function mapVideo(ch: ChannelTarget, id: string, v: Json): UpstreamPoll {
  const p = Number(v.progress);
  const progress = Number.isFinite(p) ? Math.max(0, Math.min(100, Math.round(p))) : 0;
  // An unknown word: still running; the task's own deadline bounds it (never a failure on a word we do not know).
  if (!isVideoStatus(v.status)) return { status: 'processing', progress };
  switch (v.status) {
    case 'queued':
      return { status: 'pending', progress };
    case 'in_progress':
      return { status: 'processing', progress };
    case 'completed':
      return { status: 'completed', progress: 100, media: [videoMedia(ch, id, v)] };
    case 'failed': {
      const e = isObj(v.error) ? v.error : {};
      const code = typeof e.code === 'string' && e.code ? e.code : undefined;
      const message = truncate(typeof e.message === 'string' && e.message ? e.message : 'Video generation failed', 1000);
      return { status: 'failed', progress, error: { message, ...(code ? { type: code } : {}), moderation: isModerationFailure(code, message) } };
    }
    default: {
      const never: never = v.status;
      return never;
    }
  }
}

/** The MP4 at `/v1/videos/{id}/content` needs the channel's key: the gateway downloads and keeps it. */
function videoMedia(ch: ChannelTarget, id: string, v: Json): UpstreamMedia {
  const seconds = Number(v.seconds);
  return {
    kind: 'video',
    source: { url: videoUrl(ch, id, '/content'), headers: authHeaders(ch) },
    ...(sizeOfWxH(v.size) ?? {}),
    ...(Number.isFinite(seconds) && seconds > 0 ? { durationSeconds: seconds } : {}),
  };
}
