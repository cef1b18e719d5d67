import { UpstreamError } from '@gmg/errors';
import {
  CALLBACKS_SETTING,
  callbacksSettingProblem,
  commonSettingsProblem,
  type ChannelSettings,
  type ChannelTarget,
  type UpstreamAdapter,
  type UpstreamPoll,
} from '../../adapter';
import { checkTranslation, translateInput, vendorModelOf, type Unsupported } from '../../translation';
import { truncate } from '../../upstream-failure';
import { createVendorHttp, joinUrl, withChannelHeaders } from '../../vendor-call';
import { callKling } from './kling.errors';
import { klingTokenCache } from './kling.jwt';
import { mapKlingTask } from './kling.status';
import { KLING_OMNI_PATH, KLING_TRANSLATION } from './kling.translation';

export interface KlingAdapterOptions {
  /** Per vendor call (submit, poll), connect to last byte. */
  timeoutMs: number;
  /** Clock (tests): the JWT's `exp`/`nbf` and its renewal follow it. */
  now?: () => number;
}

/** The task paths Kling polls as `{path}/{task_id}`; a stored id names one of them, nothing else reaches a URL. */
const TASK_PATHS: Readonly<Record<string, string>> = {
  'omni-video': KLING_OMNI_PATH,
  text2video: '/v1/videos/text2video',
  image2video: '/v1/videos/image2video',
};
const TASK_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** Our upstream task id: `<endpoint>:<Kling task_id>` (the poll path depends on the submit path). */
function decodeRef(upstreamTaskId: string): { path: string; id: string } {
  const at = upstreamTaskId.indexOf(':');
  const path = TASK_PATHS[upstreamTaskId.slice(0, at)];
  const id = upstreamTaskId.slice(at + 1);
  if (at < 0 || !path || !TASK_ID.test(id)) throw new UpstreamError('kling: the upstream task id is not a Kling task reference', false, undefined, 'not_found');
  return { path, id };
}

/**
 * `settings` of a kling channel: the common `headers` and `body` only (the region is the channel's `base_url`:
 * https://api-singapore.klingai.com, https://api-beijing.klingai.com) and `callbacks` (false: no callback URL).
 * `body.callback_url` is refused: the gateway sets it itself (its own signed URL; Kling does not sign callbacks).
 */
function checkKlingSettings(settings: Readonly<ChannelSettings>): Unsupported | undefined {
  return (
    commonSettingsProblem('kling', settings, {
      options: [CALLBACKS_SETTING],
      reserved: ['callback_url', 'external_task_id', 'model_name'],
      reservedWhy: 'the kling protocol sets it itself (or not at all)',
    }) ?? callbacksSettingProblem(settings)
  );
}

/**
 * Kling's official API (docs/upstreams/kling.md): `POST {base_url}/v1/videos/omni-video` with a short-lived HS256
 * JWT made from the channel's `<access_key>|<secret_key>`, then `GET` the same path + `/{task_id}` until `succeed` or
 * `failed`. Kling documents no cancel: a task cancelled here runs on (and is billed) there.
 */
export function createKlingAdapter(opts: KlingAdapterOptions): UpstreamAdapter {
  const http = createVendorHttp({ timeoutMs: opts.timeoutMs, userAgent: 'gmg-kling-adapter/1' });
  const token = klingTokenCache(opts.now ?? Date.now);
  const headers = (ch: ChannelTarget) => withChannelHeaders(ch, { authorization: `Bearer ${token(ch.apiKey)}` });

  return {
    protocol: 'kling',
    translation: KLING_TRANSLATION,
    check: (_ch, req) => checkTranslation(KLING_TRANSLATION, req),
    checkSettings: checkKlingSettings,
    callbacks: true,

    async submit(ch, req, ctx) {
      const problem = checkTranslation(KLING_TRANSLATION, req);
      if (problem) throw new UpstreamError(`kling: ${problem.message}`, false, undefined, 'bad_request');
      const describe = `upstream ${ch.name} POST ${KLING_OMNI_PATH}`;
      const body = {
        ...translateInput(KLING_TRANSLATION, ch, req),
        model_name: vendorModelOf(KLING_TRANSLATION, ch, req),
        // Kling posts the task to `callback_url` when its status changes (docs/upstreams/kling.md, "Callbacks")
        ...(ctx.callbackUrl ? { callback_url: ctx.callbackUrl } : {}),
      };
      // The token is made outside the call: a channel key of the wrong shape is the channel's failure, not the network's.
      const auth = headers(ch);
      const answer = await callKling(ch, 'submit', describe, () => http.post(joinUrl(ch.baseUrl, KLING_OMNI_PATH), body, auth));
      const data = answer.data as { task_id?: unknown } | undefined;
      const id = typeof data?.task_id === 'string' ? data.task_id : undefined;
      // No task id: the task may exist at Kling but cannot be followed; retryable (Kling has no idempotency key).
      if (!id || !TASK_ID.test(id)) throw new UpstreamError(`${describe}: answer without a usable data.task_id`, true, undefined, 'server');
      return { upstreamTaskId: `omni-video:${id}` };
    },

    async poll(ch, upstreamTaskId): Promise<UpstreamPoll> {
      const ref = decodeRef(upstreamTaskId);
      const describe = `upstream ${ch.name} GET ${ref.path}/${truncate(ref.id, 80)}`;
      const auth = headers(ch);
      const answer = await callKling(ch, 'poll', describe, () => http.get(joinUrl(ch.baseUrl, `${ref.path}/${ref.id}`), auth));
      return mapKlingTask(answer.data, describe);
    },
  };
}
