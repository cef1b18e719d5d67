import { UpstreamError } from '@gmg/errors';
import { commonSettingsProblem, type ChannelSettings, type ChannelTarget, type UpstreamAdapter, type UpstreamPoll } from '../../adapter';
import { checkTranslation, translateInput, vendorModelOf, type Unsupported } from '../../translation';
import { truncate } from '../../upstream-failure';
import { callVendor, createVendorHttp, joinUrl, withChannelHeaders } from '../../vendor-call';
import { mapBflResult } from './bfl.status';
import { decodeBflRef, encodeBflRef, refOfSubmitAnswer, trustedPollUrl } from './bfl.task-ref';
import { BFL_TRANSLATION } from './bfl.translation';

export interface BflAdapterOptions {
  /** Per vendor call (submit, poll), connect to last byte. */
  timeoutMs: number;
  /** How long after the submit a `Task not found` (or a 404 from the polling URL) still reads as pending. Default 60 s. */
  notFoundGraceMs?: number;
  /** Clock (tests). */
  now?: () => number;
}

/** A vendor model is one path segment or a few (`flux-2-pro`, `flux-tools/outpainting-v1`), never a URL of its own. */
const VENDOR_MODEL = /^[A-Za-z0-9._-]{1,100}(\/[A-Za-z0-9._-]{1,100}){0,3}$/;

/**
 * `settings` of a bfl channel: only the common `headers` and `body`. The region is the channel's `base_url`
 * (https://api.bfl.ai global, https://api.eu.bfl.ai, https://api.us.bfl.ai). `body.webhook_url` is refused: with
 * it BFL answers a webhook acknowledgement without the `polling_url` this adapter follows.
 */
function checkBflSettings(settings: Readonly<ChannelSettings>): Unsupported | undefined {
  return commonSettingsProblem('bfl', settings, {
    reserved: ['webhook_url', 'webhook_secret'],
    reservedWhy: 'the gateway polls the task; a webhook answer has no polling_url',
  });
}

/**
 * The FLUX API of Black Forest Labs (docs/upstreams.md, `bfl`): `POST {base_url}/v1/{model}` with `x-key`, then
 * `GET` the `polling_url` it returned until a final word. BFL documents no cancel, so there is none here: a task
 * cancelled on our side runs on at BFL (and is billed there) to its end.
 */
export function createBflAdapter(opts: BflAdapterOptions): UpstreamAdapter {
  const http = createVendorHttp({ timeoutMs: opts.timeoutMs, userAgent: 'gmg-bfl-adapter/1' });
  const now = opts.now ?? Date.now;
  const grace = opts.notFoundGraceMs ?? 60_000;
  const headers = (ch: ChannelTarget) => withChannelHeaders(ch, { 'x-key': ch.apiKey });

  return {
    protocol: 'bfl',
    translation: BFL_TRANSLATION,
    check: (_ch, req) => checkTranslation(BFL_TRANSLATION, req),
    checkSettings: checkBflSettings,

    async submit(ch, req) {
      const problem = checkTranslation(BFL_TRANSLATION, req);
      if (problem) throw new UpstreamError(`bfl: ${problem.message}`, false, undefined, 'bad_request');
      const model = vendorModelOf(BFL_TRANSLATION, ch, req);
      if (!VENDOR_MODEL.test(model)) throw new UpstreamError(`bfl: model_map names an unusable endpoint for ${req.model}`, false, undefined, 'bad_request');
      const describe = `upstream ${ch.name} POST /v1/${model}`;
      const body = translateInput(BFL_TRANSLATION, ch, req);
      const res = await callVendor(ch, 'submit', describe, () => http.post(joinUrl(ch.baseUrl, `/v1/${model}`), body, headers(ch)));
      const ref = refOfSubmitAnswer(res.data, now(), describe);
      trustedPollUrl(ch.baseUrl, ref.pollingUrl, describe);
      return { upstreamTaskId: encodeBflRef(ref) };
    },

    async poll(ch, upstreamTaskId): Promise<UpstreamPoll> {
      const ref = decodeBflRef(upstreamTaskId);
      const describe = `upstream ${ch.name} GET polling_url of ${truncate(ref.id, 80)}`;
      const url = trustedPollUrl(ch.baseUrl, ref.pollingUrl, describe);
      const young = now() - ref.submittedAt < grace;
      try {
        const res = await callVendor(ch, 'poll', describe, () => http.get(url.href, headers(ch)));
        return mapBflResult(res.data, { describe, young });
      } catch (e) {
        // A 404 just after the submit: the task is not visible on its cluster yet (ComfyUI's BFL poller retries 404s too).
        if (e instanceof UpstreamError && e.status === 404 && young) return { status: 'pending', progress: 0 };
        throw e;
      }
    },
  };
}
