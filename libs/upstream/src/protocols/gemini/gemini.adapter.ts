import type { NormalizedRequest } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import { commonSettingsProblem, type ChannelSettings, type ChannelTarget, type UpstreamAdapter, type UpstreamPoll } from '../../adapter';
import { checkTranslation, translateInput, vendorModelOf, type Unsupported } from '../../translation';
import { truncate } from '../../upstream-failure';
import type { UpstreamAnswer } from '../../upstream-http';
import { callVendor, createVendorHttp, joinUrl, withChannelHeaders } from '../../vendor-call';
import { checkOperationName, mapOperation, normalizeGoogleAnswer, operationNameOf, readGoogleError } from './gemini.operation';
import { GEMINI_TRANSLATION as T, INSTANCE_KEYS } from './gemini.translation';

interface GeminiAdapterOptions {
  /** Per vendor call (submit, poll), connect to last byte. */
  timeoutMs: number;
}

/** A Gemini model id is one path segment (`veo-3.1-fast-generate-preview`); `models/` is added here. */
const VENDOR_MODEL = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
/** The API version in every path: Veo is served on v1beta only (Gemini API video guide). */
const VERSION = '/v1beta';
/**
 * Keys `settings.body` may not set: the instance's (the request's own) and `sampleCount` (one video is billed per
 * task; the Gemini API defaults it to 1).
 */
const FIXED_KEYS = [...INSTANCE_KEYS, 'sampleCount'];

/** `settings`: the common `headers` and `body` (merged into `parameters`, e.g. `personGeneration`, `enhancePrompt`). */
function checkGeminiSettings(settings: Readonly<ChannelSettings>): Unsupported | undefined {
  const common = commonSettingsProblem('gemini', settings, { reserved: FIXED_KEYS, reservedWhy: 'the request sets it, not the channel' });
  if (common) return common;
  const auth = Object.keys(settings.headers ?? {}).find((k) => k.toLowerCase() === 'x-goog-api-key');
  if (auth) return { field: `headers.${auth}`, message: 'the key header comes from the channel key' };
  return undefined;
}

/** Our request as the Gemini API's body: the instance keys in `instances[0]`, every other key in `parameters`. */
function geminiBody(ch: ChannelTarget, req: NormalizedRequest): Record<string, unknown> {
  const flat = translateInput(T, ch, req);
  const instance: Record<string, unknown> = {};
  const parameters: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(flat)) (INSTANCE_KEYS.includes(k) ? instance : parameters)[k] = v;
  return { instances: [instance], parameters };
}

/**
 * Veo through the Gemini API (docs/upstreams.md, `gemini`): `POST {base}/v1beta/models/{model}:predictLongRunning`
 * with `x-goog-api-key` answers an operation; `GET {base}/v1beta/{name}` until `done`. The video's link needs the
 * key: the gateway downloads and keeps it (Google deletes it after two days). No cancel: the Gemini API documents
 * none for video operations, so a task cancelled here runs on (and is billed) there.
 */
export function createGeminiAdapter(opts: GeminiAdapterOptions): UpstreamAdapter {
  const http = createVendorHttp({ timeoutMs: opts.timeoutMs, userAgent: 'gmg-gemini-adapter/1' });
  const headers = (ch: ChannelTarget) => withChannelHeaders(ch, { 'x-goog-api-key': ch.apiKey });
  const call = (ch: ChannelTarget, op: 'submit' | 'poll', describe: string, send: () => Promise<UpstreamAnswer>) =>
    callVendor(ch, op, describe, async () => normalizeGoogleAnswer(await send()), readGoogleError);

  return {
    protocol: 'gemini',
    translation: T,
    check: (_ch, req) => checkTranslation(T, req),
    checkSettings: checkGeminiSettings,

    async submit(ch, req) {
      const problem = checkTranslation(T, req);
      if (problem) throw new UpstreamError(`gemini: ${problem.message}`, false, undefined, 'bad_request');
      const model = vendorModelOf(T, ch, req);
      if (!VENDOR_MODEL.test(model)) throw new UpstreamError(`gemini: model_map names an unusable model for ${req.model}`, false, undefined, 'bad_request');
      const path = `${VERSION}/models/${model}:predictLongRunning`;
      const describe = `upstream ${ch.name} POST ${path}`;
      const res = await call(ch, 'submit', describe, () => http.post(joinUrl(ch.baseUrl, path), geminiBody(ch, req), headers(ch)));
      return { upstreamTaskId: operationNameOf(res.data, describe) };
    },

    async poll(ch, upstreamTaskId): Promise<UpstreamPoll> {
      const name = checkOperationName(upstreamTaskId);
      const describe = `upstream ${ch.name} GET ${VERSION}/${truncate(name, 200)}`;
      const res = await call(ch, 'poll', describe, () => http.get(joinUrl(ch.baseUrl, `${VERSION}/${name}`), headers(ch)));
      return mapOperation(res.data, { describe, baseUrl: ch.baseUrl, downloadHeaders: headers(ch) });
    },
  };
}
