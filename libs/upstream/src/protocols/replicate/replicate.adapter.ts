import type { NormalizedRequest } from '@gmg/contracts';
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
import { callVendor, createVendorHttp, joinUrl, withChannelHeaders } from '../../vendor-call';
import { mapPrediction } from './replicate.prediction';
import { REPLICATE_TRANSLATION } from './replicate.translation';
import { isObj } from '../../json-value';

/** A vendor model id: `owner/name` (an official model) or `owner/name:version` (a pinned version). */
interface ModelRef {
  owner: string;
  name: string;
  version?: string;
}

const NAME = '[A-Za-z0-9][A-Za-z0-9._-]*';
const MODEL_REF = new RegExp(`^(${NAME})/(${NAME})(?::([A-Za-z0-9]+))?$`);

function parseModelRef(id: string): ModelRef | undefined {
  const m = MODEL_REF.exec(id);
  return m ? { owner: m[1]!, name: m[2]!, ...(m[3] ? { version: m[3] } : {}) } : undefined;
}

/**
 * Replicate's predictions API (https://replicate.com/docs/reference/http), asynchronous: no `Prefer: wait`, the
 * worker polls. Auth `Authorization: Bearer <token>`. The prediction is polled at `{base_url}/v1/predictions/{id}`
 * (the form of its `urls.get`), built from the channel's base so a channel's own host (a proxy, the simulator) is used.
 */
export function createReplicateAdapter(opts: { timeoutMs: number }): UpstreamAdapter {
  const http = createVendorHttp({ timeoutMs: opts.timeoutMs, userAgent: 'gmg-replicate-adapter/1' });
  const headers = (ch: ChannelTarget) => withChannelHeaders(ch, { Authorization: `Bearer ${ch.apiKey}` });
  const check = (ch: ChannelTarget, req: NormalizedRequest): Unsupported | undefined => {
    const bad = checkTranslation(REPLICATE_TRANSLATION, req);
    if (bad) return bad;
    const id = vendorModelOf(REPLICATE_TRANSLATION, ch, req);
    if (parseModelRef(id)) return undefined;
    return {
      field: 'model',
      message: `\`${req.requestedModel}\` is mapped on this channel to "${truncate(id, 100)}", which is not a Replicate model (owner/name or owner/name:version)`,
    };
  };

  return {
    protocol: 'replicate',
    translation: REPLICATE_TRANSLATION,
    check,
    callbacks: true,
    checkSettings: (settings: Readonly<ChannelSettings>) =>
      commonSettingsProblem('replicate', settings, {
        options: [CALLBACKS_SETTING],
        reserved: ['webhook', 'webhook_events_filter'],
        reservedWhy: 'the gateway sets the webhook itself (vendor callbacks)',
      }) ?? callbacksSettingProblem(settings),

    async submit(ch, req, ctx) {
      const bad = check(ch, req);
      if (bad) throw new UpstreamError(bad.message, false, undefined, 'bad_request');
      const id = vendorModelOf(REPLICATE_TRANSLATION, ch, req);
      const ref = parseModelRef(id)!;
      const input = translateInput(REPLICATE_TRANSLATION, ch, req);
      // a pinned version goes to the generic endpoint; an official model has its own (both documented)
      // Replicate's webhook, only when the prediction ends (https://replicate.com/docs/topics/webhooks/setup-webhook)
      const hook = ctx.callbackUrl ? { webhook: ctx.callbackUrl, webhook_events_filter: ['completed'] } : {};
      const [path, body] = ref.version
        ? ['/v1/predictions', { version: id, input, ...hook }]
        : [`/v1/models/${encodeURIComponent(ref.owner)}/${encodeURIComponent(ref.name)}/predictions`, { input, ...hook }];
      const describe = `replicate ${ch.name} POST ${path}`;
      const res = await callVendor(ch, 'submit', describe, () => http.post(joinUrl(ch.baseUrl, path), body, headers(ch)));
      const predictionId = isObj(res.data) && typeof res.data.id === 'string' && res.data.id ? res.data.id : undefined;
      // Replicate takes no idempotency key (guess: none documented), so a 2xx without an id is not retried blindly
      if (!predictionId) throw new UpstreamError(`${describe}: answer without a prediction id`, false, res.status, 'server');
      return { upstreamTaskId: predictionId };
    },

    async poll(ch, upstreamTaskId, req): Promise<UpstreamPoll> {
      const path = `/v1/predictions/${encodeURIComponent(upstreamTaskId)}`;
      const describe = `replicate ${ch.name} GET /v1/predictions/${truncate(upstreamTaskId, 80)}`;
      const res = await callVendor(ch, 'poll', describe, () => http.get(joinUrl(ch.baseUrl, path), headers(ch)));
      if (!isObj(res.data)) throw new UpstreamError(`${describe}: answer without a prediction object`, true, res.status, 'server');
      return mapPrediction(res.data, req);
    },

    async cancel(ch, upstreamTaskId) {
      const path = `/v1/predictions/${encodeURIComponent(upstreamTaskId)}/cancel`;
      const describe = `replicate ${ch.name} POST /v1/predictions/${truncate(upstreamTaskId, 80)}/cancel`;
      try {
        await callVendor(ch, 'cancel', describe, () => http.post(joinUrl(ch.baseUrl, path), {}, headers(ch)));
      } catch (e) {
        // 409: ended already, nothing left to stop (guess: Replicate answers an ended prediction with itself, a 200)
        if (e instanceof UpstreamError && e.status === 409) return;
        throw e;
      }
    },
  };
}
