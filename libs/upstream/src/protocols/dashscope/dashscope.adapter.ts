import { UpstreamError } from '@gmg/errors';
import { commonSettingsProblem, type ChannelSettings, type ChannelTarget, type UpstreamAdapter, type UpstreamPoll } from '../../adapter';
import { checkTranslation, translateInput, vendorModelOf, type Unsupported } from '../../translation';
import { truncate } from '../../upstream-failure';
import { callVendor, createVendorHttp, joinUrl, withChannelHeaders } from '../../vendor-call';
import { parseJsonObject } from '../../json-value';
import { mapDashScopeTask, readDashScopeError } from './dashscope.status';
import { DASHSCOPE_TRANSLATION } from './dashscope.translation';

export interface DashScopeAdapterOptions {
  /** Per vendor call (submit, poll, cancel), connect to last byte. */
  timeoutMs: number;
  /** How long after the submit an UNKNOWN task status still reads as pending. Default 60 s. */
  unknownGraceMs?: number;
  /** Clock (tests). */
  now?: () => number;
}

const SUBMIT_PATH = '/api/v1/services/aigc/video-generation/video-synthesis';
/** Model Studio's model names: `wan2.6-i2v-flash`, `wan2.7-r2v`, … one path-free word. */
const VENDOR_MODEL = /^[A-Za-z0-9._-]{1,100}$/;
const TASK_ID = /^[A-Za-z0-9._-]{1,200}$/;

/** The kept upstream id: Model Studio's `task_id` and when it was submitted (an UNKNOWN just after is not final yet). */
const encodeRef = (id: string, at: number): string => JSON.stringify({ id, at });
function decodeRef(upstreamTaskId: string): { id: string; at: number } {
  const o = parseJsonObject(upstreamTaskId);
  if (typeof o.id !== 'string' || !TASK_ID.test(o.id) || typeof o.at !== 'number') {
    throw new UpstreamError('dashscope: the upstream task id is not a DashScope task reference', false, undefined, 'not_found');
  }
  return { id: o.id, at: o.at };
}

/** `{"input.prompt": …, "parameters.duration": …}` → `{input: {prompt}, parameters: {duration}}` (the table's dotted names). */
function nest(flat: Record<string, unknown>): { input: Record<string, unknown>; parameters: Record<string, unknown> } {
  const out = { input: {} as Record<string, unknown>, parameters: {} as Record<string, unknown> };
  for (const [key, value] of Object.entries(flat)) {
    const [part, field] = key.split('.', 2) as ['input' | 'parameters', string];
    out[part][field] = value;
  }
  return out;
}

const DOTTED = /^(input|parameters)\.[A-Za-z0-9_]{1,64}$/;

/**
 * `settings` of a dashscope channel: the common `headers`, and `body` whose keys name the vendor field by its dotted
 * path (`{"parameters.watermark": true}`). The region is the channel's `base_url` (dashscope-intl.aliyuncs.com
 * Singapore, dashscope-us.aliyuncs.com Virginia, dashscope.aliyuncs.com Beijing, or a workspace domain).
 */
function checkDashScopeSettings(settings: Readonly<ChannelSettings>): Unsupported | undefined {
  const common = commonSettingsProblem('dashscope', settings);
  if (common) return common;
  for (const key of Object.keys(settings.body ?? {})) {
    if (!DOTTED.test(key)) return { field: `body.${key}`, message: 'a dashscope body parameter is named by its path: `input.<field>` or `parameters.<field>`' };
  }
  return undefined;
}

/** The `output.task_id` of a submit answer; none: retryable (Model Studio documents no idempotency key, a retry submits again). */
function taskIdOf(body: unknown, describe: string): string {
  const output = typeof body === 'object' && body !== null ? (body as { output?: { task_id?: unknown } }).output : undefined;
  const id = output?.task_id;
  if (typeof id !== 'string' || !TASK_ID.test(id)) throw new UpstreamError(`${describe}: answer without a usable output.task_id`, true, undefined, 'server');
  return id;
}

/**
 * Alibaba Cloud Model Studio / DashScope, the Wan video models (docs/upstreams/dashscope.md): an asynchronous submit
 * (`X-DashScope-Async: enable`) → `output.task_id`, then `GET /api/v1/tasks/{task_id}` until a final word. Cancel
 * stops a task that is still PENDING; a RUNNING one runs on (and is billed) to its end.
 */
export function createDashScopeAdapter(opts: DashScopeAdapterOptions): UpstreamAdapter {
  const http = createVendorHttp({ timeoutMs: opts.timeoutMs, userAgent: 'gmg-dashscope-adapter/1' });
  const now = opts.now ?? Date.now;
  const grace = opts.unknownGraceMs ?? 60_000;
  const headers = (ch: ChannelTarget, async = false) =>
    withChannelHeaders(ch, { authorization: `Bearer ${ch.apiKey}`, ...(async ? { 'x-dashscope-async': 'enable' } : {}) });

  return {
    protocol: 'dashscope',
    translation: DASHSCOPE_TRANSLATION,
    check: (_ch, req) => checkTranslation(DASHSCOPE_TRANSLATION, req),
    checkSettings: checkDashScopeSettings,

    async submit(ch, req) {
      const problem = checkTranslation(DASHSCOPE_TRANSLATION, req);
      if (problem) throw new UpstreamError(`dashscope: ${problem.message}`, false, undefined, 'bad_request');
      const model = vendorModelOf(DASHSCOPE_TRANSLATION, ch, req);
      if (!VENDOR_MODEL.test(model)) throw new UpstreamError(`dashscope: model_map names an unusable model for ${req.model}`, false, undefined, 'bad_request');
      const describe = `upstream ${ch.name} POST ${SUBMIT_PATH} (${model})`;
      const body = { model, ...nest(translateInput(DASHSCOPE_TRANSLATION, ch, req)) };
      const res = await callVendor(ch, 'submit', describe, () => http.post(joinUrl(ch.baseUrl, SUBMIT_PATH), body, headers(ch, true)), readDashScopeError);
      return { upstreamTaskId: encodeRef(taskIdOf(res.data, describe), now()) };
    },

    async poll(ch, upstreamTaskId): Promise<UpstreamPoll> {
      const ref = decodeRef(upstreamTaskId);
      const describe = `upstream ${ch.name} GET /api/v1/tasks/${truncate(ref.id, 80)}`;
      const url = joinUrl(ch.baseUrl, `/api/v1/tasks/${encodeURIComponent(ref.id)}`);
      const res = await callVendor(ch, 'poll', describe, () => http.get(url, headers(ch)), readDashScopeError);
      return mapDashScopeTask(res.data, { describe, young: now() - ref.at < grace });
    },

    async cancel(ch, upstreamTaskId) {
      const ref = decodeRef(upstreamTaskId);
      const path = `/api/v1/tasks/${encodeURIComponent(ref.id)}/cancel`;
      const describe = `upstream ${ch.name} POST /api/v1/tasks/${truncate(ref.id, 80)}/cancel`;
      try {
        await callVendor(ch, 'cancel', describe, () => http.post(joinUrl(ch.baseUrl, path), {}, headers(ch)), readDashScopeError);
      } catch (e) {
        // Only a PENDING task can be cancelled: a 4xx about a task already running or ended leaves nothing to stop.
        if (e instanceof UpstreamError && (e.status === 400 || e.status === 409)) return;
        throw e;
      }
    },
  };
}
