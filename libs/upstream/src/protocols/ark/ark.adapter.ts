import { createHash } from 'node:crypto';
import type { NormalizedRequest } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import {
  CALLBACKS_SETTING,
  callbacksSettingProblem,
  commonSettingsProblem,
  type ChannelSettings,
  type ChannelTarget,
  type SubmitOutcome,
  type UpstreamAdapter,
} from '../../adapter';
import { checkTranslation, translateInput, vendorModelOf, type Unsupported } from '../../translation';
import { truncate } from '../../upstream-failure';
import type { UpstreamHttp } from '../../upstream-http';
import { callVendor, createVendorHttp, joinUrl, withChannelHeaders } from '../../vendor-call';
import { arkImagesOf, isArkModeration, mapArkTask, readArkError } from './ark.task';
import { ARK_TRANSLATION as T } from './ark.translation';
import { type Json, isObj } from '../../json-value';

interface ArkAdapterOptions {
  /** Per call of a video task (submit, poll, cancel), connect to last byte. */
  timeoutMs: number;
  /** Per synchronous Seedream call (a 4K image takes about a minute). Default 5 min. */
  syncTimeoutMs?: number;
}

const USER_AGENT = 'gmg-ark-adapter/1';
const TASKS = '/api/v3/contents/generations/tasks';
const IMAGES = '/api/v3/images/generations';
/** Our id of an image call (Ark gives none): the task ended at submit, nothing is ever polled by it. */
const IMAGE_ID_PREFIX = 'img_';

/**
 * ByteDance ModelArk (docs/upstreams.md, `ark`): Seedance video is a content-generation task (submit, poll, cancel
 * while queued); Seedream images are one synchronous call whose answer is the finished task (`SubmitOutcome.done`).
 * The region is the channel's `base_url` (BytePlus `https://ark.ap-southeast.bytepluses.com`, Volcengine
 * `https://ark.cn-beijing.volces.com`).
 */
export function createArkAdapter(opts: ArkAdapterOptions): UpstreamAdapter {
  const jobs = createVendorHttp({ timeoutMs: opts.timeoutMs, userAgent: USER_AGENT });
  // Its own pool and timeout: a minute-long image call must not hold the polls' sockets, nor live by their timeout.
  const sync = createVendorHttp({ timeoutMs: opts.syncTimeoutMs ?? 300_000, maxResponseBytes: 64 * 1024 * 1024, maxSockets: 16, userAgent: USER_AGENT });
  return {
    protocol: 'ark',
    translation: T,
    check: (_ch, req) => checkTranslation(T, req),
    checkSettings,
    // video tasks only: an image call ends at submit, nothing to call back about
    callbacks: true,
    submit: (ch, req, ctx) => (req.pool === 'video' ? submitVideo(jobs, ch, req, ctx.callbackUrl) : submitImages(sync, ch, req, ctx.taskId)),
    async poll(ch, upstreamTaskId) {
      if (upstreamTaskId.startsWith(IMAGE_ID_PREFIX)) {
        return { status: 'failed', progress: 0, error: { message: 'an ark image task ends at submit: there is nothing to poll' } };
      }
      const describe = `upstream ${ch.name} GET ${TASKS}/${truncate(upstreamTaskId, 80)}`;
      const res = await callVendor(ch, 'poll', describe, () => jobs.get(taskUrl(ch, upstreamTaskId), headers(ch)), readArkError);
      return mapArkTask(res.data, describe);
    },
    async cancel(ch, upstreamTaskId) {
      if (upstreamTaskId.startsWith(IMAGE_ID_PREFIX)) return;
      const describe = `upstream ${ch.name} DELETE ${TASKS}/${truncate(upstreamTaskId, 80)}`;
      try {
        await callVendor(ch, 'cancel', describe, () => jobs.delete(taskUrl(ch, upstreamTaskId), headers(ch)), readArkError);
      } catch (e) {
        // 404: gone already; 409 (guess): running or ended, Ark cancels only queued tasks. Nothing left to stop.
        if (e instanceof UpstreamError && (e.status === 404 || e.status === 409)) return;
        throw e;
      }
    },
  };
}

// the gateway sets `callback_url` itself (its signed URL, vendor callbacks); a stream answers server-sent events, not
// the JSON we read
const checkSettings = (s: Readonly<ChannelSettings>): Unsupported | undefined =>
  commonSettingsProblem('ark', s, {
    options: [CALLBACKS_SETTING],
    reserved: ['callback_url', 'stream'],
    reservedWhy: 'the gateway sets the callback itself and reads one JSON answer',
  }) ?? callbacksSettingProblem(s);

const headers = (ch: ChannelTarget): Record<string, string> => withChannelHeaders(ch, { Authorization: `Bearer ${ch.apiKey}` });
const taskUrl = (ch: ChannelTarget, id: string): string => joinUrl(ch.baseUrl, `${TASKS}/${encodeURIComponent(id)}`);
const vendorBody = (ch: ChannelTarget, req: NormalizedRequest): Json => ({ ...translateInput(T, ch, req), model: vendorModelOf(T, ch, req) });

async function submitVideo(client: UpstreamHttp, ch: ChannelTarget, req: NormalizedRequest, callbackUrl?: string): Promise<SubmitOutcome> {
  const describe = `upstream ${ch.name} POST ${TASKS}`;
  // Ark posts the task to `callback_url` when its status changes (https://docs.byteplus.com/en/docs/ModelArk/1520757)
  const body = { ...vendorBody(ch, req), ...(callbackUrl ? { callback_url: callbackUrl } : {}) };
  const res = await callVendor(ch, 'submit', describe, () => client.post(joinUrl(ch.baseUrl, TASKS), body, headers(ch)), readArkError);
  const id = isObj(res.data) && typeof res.data.id === 'string' ? res.data.id : '';
  // Final: the task may exist without us knowing its id; Ark has no idempotency key to find it again.
  if (!id) throw new UpstreamError(`${describe}: answer without a task id`, false, res.status, 'server');
  return { upstreamTaskId: id };
}

/** One synchronous call; its answer is the finished task (the step machine keeps the images from their links). */
async function submitImages(client: UpstreamHttp, ch: ChannelTarget, req: NormalizedRequest, taskId: string): Promise<SubmitOutcome> {
  const describe = `upstream ${ch.name} POST ${IMAGES}`;
  const res = await callVendor(ch, 'submit', describe, () => client.post(joinUrl(ch.baseUrl, IMAGES), vendorBody(ch, req), headers(ch)), readArkError);
  const { media, refused } = arkImagesOf(res.data, req);
  if (media.length === 0) {
    const message = truncate(refused?.message ?? 'Image generation failed', 1000);
    // Final: the vendor answered (and may have billed); calling again would pay twice.
    if (refused && isArkModeration(refused.code, refused.message)) throw new UpstreamError(`${describe}: ${message}`, false, res.status, 'moderation');
    throw new UpstreamError(`${describe}: answer without images${refused ? `: ${message}` : ''}`, false, res.status, 'server');
  }
  const created = isObj(res.data) && typeof res.data.created === 'number' ? res.data.created : Math.floor(Date.now() / 1000);
  const upstreamTaskId = `${IMAGE_ID_PREFIX}${created}_${createHash('sha256').update(taskId).digest('hex').slice(0, 10)}`;
  return { upstreamTaskId, done: { status: 'completed', progress: 100, media } };
}
