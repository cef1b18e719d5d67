import { UpstreamError } from '@gmg/errors';
import {
  CALLBACKS_SETTING,
  callbacksSettingProblem,
  commonSettingsProblem,
  type ChannelTarget,
  type UpstreamAdapter,
  type UpstreamMedia,
  type UpstreamPoll,
} from '../../adapter';
import { checkTranslation, translateInput } from '../../translation';
import { isModerationFailure, truncate } from '../../upstream-failure';
import type { UpstreamAnswer } from '../../upstream-http';
import { callVendor, createVendorHttp, joinUrl, readCommonError, withChannelHeaders, type VendorErrorReader, type VendorOperation } from '../../vendor-call';
import { FAL_TRANSLATION, falEndpointOf } from './fal.translation';
import { type Json, isObj, str } from '../../json-value';

/** An endpoint id: `owner/name` plus optional sub-path segments (never `..`, never a query). */
const ENDPOINT_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)+$/;
const REQUEST_ID = /^[A-Za-z0-9_-]{1,128}$/;
/** Our upstream task id is the request's queue path: `<owner>/<name>/requests/<request_id>` (no job data needed). */
const TASK_PATH = /^([A-Za-z0-9_-][A-Za-z0-9._-]*\/[A-Za-z0-9_-][A-Za-z0-9._-]*)\/requests\/([A-Za-z0-9_-]{1,128})$/;

/** fal's status words (queue docs); anything else is still running until the step machine's deadline. */
const STATUS_WORDS = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'] as const;
type StatusWord = (typeof STATUS_WORDS)[number];
const isStatusWord = (w: string): w is StatusWord => (STATUS_WORDS as readonly string[]).includes(w);

/**
 * fal's error bodies: model errors `{detail: [{loc, msg, type, url, ctx}]}`, request errors `{detail, error_type}`
 * (https://fal.ai/docs/documentation/model-apis/errors, …/request-errors).
 */
const readFalError: VendorErrorReader = (body) => {
  if (isObj(body) && Array.isArray(body.detail)) {
    const d: unknown = body.detail.find(isObj);
    const loc = isObj(d) && Array.isArray(d.loc) ? ` (${d.loc.join('.')})` : '';
    return { type: isObj(d) ? str(d.type) : undefined, message: isObj(d) && str(d.msg) ? `${str(d.msg)}${loc}` : JSON.stringify(body.detail).slice(0, 300) };
  }
  if (isObj(body) && typeof body.detail === 'string') return { type: str(body.error_type), message: body.detail };
  return readCommonError(body);
};

/** The app of an endpoint: queue status and result URLs name `owner/name` without the sub-path (fal queue docs). */
const appOf = (endpoint: string): string => endpoint.split('/').slice(0, 2).join('/');

function taskPath(upstreamTaskId: string): string {
  if (!TASK_PATH.test(upstreamTaskId))
    throw new UpstreamError(`fal: malformed upstream task id ${truncate(upstreamTaskId, 80)}`, false, undefined, 'not_found');
  return upstreamTaskId;
}

const failed = (message: string, type?: string): UpstreamPoll => ({
  status: 'failed',
  progress: 100,
  error: { message: truncate(message, 1000), ...(type ? { type } : {}), moderation: isModerationFailure(type, message) },
});

/** Statuses at the response URL that say "ask again later" or "not your request", not "the request failed". */
const NOT_A_TASK_FAILURE = new Set([401, 402, 403, 404, 408, 429, 502, 503, 504]);

/**
 * fal's queue API (https://docs.fal.ai/model-endpoints/queue): `POST {base}/{endpoint}` → `request_id`; `GET
 * {base}/{app}/requests/{id}/status` → IN_QUEUE / IN_PROGRESS / COMPLETED; the result (or the failure, as a 4xx/5xx
 * with `detail`) at `GET {base}/{app}/requests/{id}`; `PUT …/cancel`. The channel's base_url is the queue base
 * (https://queue.fal.run).
 */
export function createFalAdapter(opts: { timeoutMs: number }): UpstreamAdapter {
  const http = createVendorHttp({ timeoutMs: opts.timeoutMs, userAgent: 'gmg-fal-adapter/1' });
  const headersFor = (ch: ChannelTarget) => withChannelHeaders(ch, { Authorization: `Key ${ch.apiKey}` });
  const call = (ch: ChannelTarget, op: VendorOperation, describe: string, send: () => Promise<UpstreamAnswer>) =>
    callVendor(ch, op, describe, send, readFalError);

  const check: NonNullable<UpstreamAdapter['check']> = (ch, req) => {
    const problem = checkTranslation(FAL_TRANSLATION, req);
    if (problem) return problem;
    const endpoint = falEndpointOf(ch, req);
    return ENDPOINT_ID.test(endpoint) ? undefined : { field: 'model', message: `the channel maps ${req.requestedModel} to an invalid fal endpoint id` };
  };

  async function result(ch: ChannelTarget, path: string, status: Json): Promise<UpstreamPoll> {
    // newer queue answers carry the failure on the status itself
    if (str(status.error)) return failed(str(status.error)!, str(status.error_type));
    const describe = `fal ${ch.name} GET /${path}`;
    let res: UpstreamAnswer;
    try {
      res = await call(ch, 'poll', describe, () => http.get(joinUrl(ch.baseUrl, `/${path}`), headersFor(ch)));
    } catch (e) {
      // the request ended and its answer is the failure (422 validation or content policy, 500 runner error);
      // the task's message names fal, not our channel
      if (e instanceof UpstreamError && e.status !== undefined && (e.kind === 'moderation' || !NOT_A_TASK_FAILURE.has(e.status))) {
        const message = e.message.startsWith(describe) ? `fal${e.message.slice(describe.length)}` : e.message;
        return failed(message, e.kind === 'moderation' ? 'moderation' : undefined);
      }
      throw e;
    }
    return completed(res.data);
  }

  return {
    protocol: 'fal',
    check,
    callbacks: true,

    checkSettings: (settings) => commonSettingsProblem('fal', settings, { options: [CALLBACKS_SETTING] }) ?? callbacksSettingProblem(settings),

    async submit(ch, req, ctx) {
      const problem = check(ch, req);
      if (problem) throw new UpstreamError(problem.message, false, undefined, 'bad_request');
      const endpoint = falEndpointOf(ch, req);
      const describe = `fal ${ch.name} POST /${endpoint}`;
      // fal's webhook: the `fal_webhook` query parameter of the queue submit (https://docs.fal.ai/model-endpoints/webhooks)
      const query = ctx.callbackUrl ? `?fal_webhook=${encodeURIComponent(ctx.callbackUrl)}` : '';
      const res = await call(ch, 'submit', describe, () =>
        http.post(joinUrl(ch.baseUrl, `/${endpoint}${query}`), translateInput(FAL_TRANSLATION, ch, req), headersFor(ch)),
      );
      const id = isObj(res.data) ? res.data.request_id : undefined;
      if (typeof id !== 'string' || !REQUEST_ID.test(id)) throw new UpstreamError(`${describe}: answer without a request_id`, true, res.status, 'server');
      return { upstreamTaskId: `${appOf(endpoint)}/requests/${id}` };
    },

    async poll(ch, upstreamTaskId) {
      const path = taskPath(upstreamTaskId);
      const res = await call(ch, 'poll', `fal ${ch.name} GET /${path}/status`, () => http.get(joinUrl(ch.baseUrl, `/${path}/status`), headersFor(ch)));
      const status = isObj(res.data) ? res.data : {};
      const word = typeof status.status === 'string' ? status.status : '';
      // an unknown word is "still running": the step machine's deadline bounds it (new-api #5045)
      if (!isStatusWord(word)) return { status: 'processing', progress: 50 };
      switch (word) {
        case 'IN_QUEUE':
          return { status: 'pending', progress: 10 };
        case 'IN_PROGRESS':
          return { status: 'processing', progress: 50 };
        case 'COMPLETED':
          return result(ch, path, status);
        default: {
          const unreachable: never = word;
          return unreachable;
        }
      }
    },

    async cancel(ch, upstreamTaskId) {
      const path = `${taskPath(upstreamTaskId)}/cancel`;
      try {
        await call(ch, 'cancel', `fal ${ch.name} PUT /${path}`, () => http.put(joinUrl(ch.baseUrl, `/${path}`), {}, headersFor(ch)));
      } catch (e) {
        // 400 ALREADY_COMPLETED: it started or ended, nothing left to stop
        if (e instanceof UpstreamError && e.status === 400) return;
        throw e;
      }
    },
  };
}

/** A completed answer: `images[]` or `video` (fal files `{url, content_type, width, height}`), kept by the gateway. */
function completed(data: unknown): UpstreamPoll {
  const body = isObj(data) ? data : {};
  // fal's safety checker answers flagged images (black) with has_nsfw_concepts: what was asked is not there
  if (Array.isArray(body.has_nsfw_concepts) && body.has_nsfw_concepts.includes(true)) {
    return failed("fal's safety checker flagged the output (has_nsfw_concepts: NSFW content)", 'moderation');
  }
  const files = Array.isArray(body.images) ? body.images : isObj(body.video) ? [body.video] : Array.isArray(body.videos) ? body.videos : [];
  const kind: UpstreamMedia['kind'] = Array.isArray(body.images) ? 'image' : 'video';
  const media = files.filter(isObj).flatMap((f): UpstreamMedia[] => {
    const url = str(f.url);
    if (!url || !/^https?:\/\//i.test(url)) return [];
    return [
      {
        kind,
        // never the channel's key: fal's files are public CDN links on another host
        source: { url },
        ...(typeof f.width === 'number' ? { width: f.width } : {}),
        ...(typeof f.height === 'number' ? { height: f.height } : {}),
        ...(typeof f.duration === 'number' ? { durationSeconds: f.duration } : {}),
      },
    ];
  });
  if (media.length === 0) return failed('fal answered the request without a result file');
  return { status: 'completed', progress: 100, media };
}
