import { UpstreamError } from '@gmg/errors';
import { commonSettingsProblem, type ChannelSettings, type ChannelTarget, type UpstreamAdapter, type UpstreamPoll } from '../../adapter';
import { checkTranslation, translateInput, vendorModelOf, type Unsupported } from '../../translation';
import { truncate } from '../../upstream-failure';
import { callVendor, createVendorHttp, joinUrl, withChannelHeaders } from '../../vendor-call';
import { mapRunwayTask } from './runway.status';
import { RUNWAY_TRANSLATION, runwayEndpointOf } from './runway.translation';

export interface RunwayAdapterOptions {
  /** Per vendor call (submit, poll, cancel), connect to last byte. */
  timeoutMs: number;
}

/** The API version every call names (`X-Runway-Version`, required); the one Runway's SDKs send by default. */
const RUNWAY_VERSION = '2024-11-06';
const VERSION_FORMAT = /^\d{4}-\d{2}-\d{2}$/;
/** Runway's task ids are UUIDs (the simulator's `task_…`); anything else in a path is refused before it reaches the URL. */
const TASK_ID = /^[A-Za-z0-9_-]{1,100}$/;

/** `settings` of a runway channel: the common `headers` and `body`, and `runway_version` (another `X-Runway-Version`). */
function checkRunwaySettings(s: Readonly<ChannelSettings>): Unsupported | undefined {
  const common = commonSettingsProblem('runway', s, { options: ['runway_version'] });
  if (common) return common;
  if (s.runway_version !== undefined && (typeof s.runway_version !== 'string' || !VERSION_FORMAT.test(s.runway_version))) {
    return { field: 'runway_version', message: '`runway_version` is an API version date such as 2024-11-06 (sent as X-Runway-Version)' };
  }
  return undefined;
}

const headers = (ch: ChannelTarget): Record<string, string> =>
  withChannelHeaders(ch, {
    Authorization: `Bearer ${ch.apiKey}`,
    'X-Runway-Version': typeof ch.settings.runway_version === 'string' ? ch.settings.runway_version : RUNWAY_VERSION,
  });

function taskUrl(ch: ChannelTarget, id: string): string {
  if (!TASK_ID.test(id)) throw new UpstreamError('runway: the upstream task id is not a Runway task id', false, undefined, 'not_found');
  return joinUrl(ch.baseUrl, `/v1/tasks/${id}`);
}

/** The `{id}` of a submit answer. None: retryable (Runway documents no idempotency key, so a retry submits again). */
function idOf(body: unknown, describe: string): string {
  const id = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).id : undefined;
  if (typeof id !== 'string' || !TASK_ID.test(id)) throw new UpstreamError(`${describe}: answer without a usable task id`, true, undefined, 'server');
  return id;
}

/**
 * Runway's API (docs/upstreams/runway.md): `POST {base_url}/v1/text_to_video` or `/v1/image_to_video` with
 * `Authorization: Bearer` and `X-Runway-Version` → `{id}`; `GET /v1/tasks/{id}` until a final word; `DELETE` cancels.
 */
export function createRunwayAdapter(opts: RunwayAdapterOptions): UpstreamAdapter {
  const http = createVendorHttp({ timeoutMs: opts.timeoutMs, userAgent: 'gmg-runway-adapter/1' });
  return {
    protocol: 'runway',
    translation: RUNWAY_TRANSLATION,
    check: (_ch, req) => checkTranslation(RUNWAY_TRANSLATION, req),
    checkSettings: checkRunwaySettings,
    async submit(ch, req) {
      const problem = checkTranslation(RUNWAY_TRANSLATION, req);
      if (problem) throw new UpstreamError(`runway: ${problem.message}`, false, undefined, 'bad_request');
      const body = { ...translateInput(RUNWAY_TRANSLATION, ch, req), model: vendorModelOf(RUNWAY_TRANSLATION, ch, req) };
      const path = runwayEndpointOf(body);
      const describe = `upstream ${ch.name} POST ${path}`;
      const res = await callVendor(ch, 'submit', describe, () => http.post(joinUrl(ch.baseUrl, path), body, headers(ch)));
      return { upstreamTaskId: idOf(res.data, describe) };
    },
    async poll(ch, upstreamTaskId): Promise<UpstreamPoll> {
      const describe = `upstream ${ch.name} GET /v1/tasks/${truncate(upstreamTaskId, 80)}`;
      const res = await callVendor(ch, 'poll', describe, () => http.get(taskUrl(ch, upstreamTaskId), headers(ch)));
      return mapRunwayTask(res.data, describe);
    },
    async cancel(ch, upstreamTaskId) {
      const describe = `upstream ${ch.name} DELETE /v1/tasks/${truncate(upstreamTaskId, 80)}`;
      try {
        await callVendor(ch, 'cancel', describe, () => http.delete(taskUrl(ch, upstreamTaskId), headers(ch)));
      } catch (e) {
        // 404: gone already (a deleted or unknown task): nothing left to stop.
        if (e instanceof UpstreamError && e.status === 404) return;
        throw e;
      }
    },
  };
}
