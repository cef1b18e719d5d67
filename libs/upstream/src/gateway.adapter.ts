import { contractEndpointOf, type NormalizedRequest, type TaskResult } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import { upstreamModelOf, type ChannelTarget, type UpstreamAdapter, type UpstreamPoll, type UpstreamStatus } from './adapter';
import { isModerationFailure, truncate } from './upstream-failure';
import { ARTGEN_NATIVE_PATH, mapArtgenNative } from './artgen-native';
import type { UpstreamAnswer, UpstreamHttp } from './upstream-http';
import { callVendor, createVendorHttp, joinUrl, withChannelHeaders, type VendorOperation } from './vendor-call';
import { isObj } from './json-value';

export const GATEWAY_PROTOCOL = 'gateway';

export interface GatewayAdapterOptions {
  /** Per request, connect to last byte. Default 30 s. */
  timeoutMs?: number;
  /** Largest response body accepted. Default 1 MiB (a task answer is a few KB). */
  maxResponseBytes?: number;
  /** Keep-alive sockets per upstream host. Default 64. */
  maxSockets?: number;
  /** Endpoint override, mostly for tests; default: contractEndpointOf (libs/contracts). */
  endpointFor?: (req: NormalizedRequest) => string | undefined;
}

/**
 * Adapter for an upstream that speaks this same public API (a chained gateway, or upstream-sim).
 * Upstream channels are operator-configured and may be on loopback, so no SSRF filter here.
 */
export function createGatewayAdapter(opts: GatewayAdapterOptions = {}): UpstreamAdapter {
  const client = createUpstreamClient(opts);
  const endpointFor = opts.endpointFor ?? contractEndpointOf;
  return {
    protocol: GATEWAY_PROTOCOL,

    async submit(ch, req, ctx) {
      // a per-request path (the art suite's action) wins over the model's endpoint
      const endpoint = req.upstreamPath ?? endpointFor(req);
      if (!endpoint) throw new UpstreamError(`no upstream endpoint known for model ${req.model}`, false, undefined, 'bad_request');
      const describe = `upstream ${ch.name} POST ${endpoint}`;
      const res = await callUpstream(ch, 'submit', describe, () =>
        client.post(joinUrl(ch.baseUrl, endpoint), gatewayBody(ch, req), { ...headersFor(ch), 'Idempotency-Key': ctx.taskId }),
      );
      const upstreamTaskId = parseAckTaskId(res.data);
      if (!upstreamTaskId) {
        // A 2xx without a task id: the upstream misbehaves; retrying with the same idempotency key is safe.
        throw new UpstreamError(`${describe}: acknowledgement without a task id`, true, res.status, 'server');
      }
      return { upstreamTaskId };
    },

    async poll(ch, upstreamTaskId, req) {
      if (req?.pool === 'artgen') return pollArtgen(client, ch, upstreamTaskId);
      const describe = `upstream ${ch.name} GET /v1/tasks/${truncate(upstreamTaskId, 80)}`;
      const res = await callUpstream(ch, 'poll', describe, () =>
        client.get(joinUrl(ch.baseUrl, `/v1/tasks/${encodeURIComponent(upstreamTaskId)}`), headersFor(ch)),
      );
      const data = isObj(res.data) ? res.data.data : undefined;
      if (!isObj(data)) throw new UpstreamError(`${describe}: answer without a task object`, true, res.status, 'server');
      return mapUnifiedTask(data, describe);
    },

    async cancel(ch, upstreamTaskId, req) {
      const base = req?.pool === 'artgen' ? ARTGEN_NATIVE_PATH : '/v1/tasks';
      const path = `${base}/${encodeURIComponent(upstreamTaskId)}/cancel`;
      const describe = `upstream ${ch.name} POST ${base}/${truncate(upstreamTaskId, 80)}/cancel`;
      try {
        await callUpstream(ch, 'cancel', describe, () => client.post(joinUrl(ch.baseUrl, path), {}, headersFor(ch)));
      } catch (e) {
        // 409: the upstream task had ended already; nothing left to stop.
        if (e instanceof UpstreamError && e.status === 409) return;
        throw e;
      }
    },
  };
}

const createUpstreamClient = (opts: GatewayAdapterOptions): UpstreamHttp =>
  createVendorHttp({
    timeoutMs: opts.timeoutMs ?? 30_000,
    maxResponseBytes: opts.maxResponseBytes,
    maxSockets: opts.maxSockets,
    userAgent: 'gmg-gateway-adapter/1',
  });

const headersFor = (ch: ChannelTarget): Record<string, string> => withChannelHeaders(ch, ch.apiKey ? { Authorization: `Bearer ${ch.apiKey}` } : {});

const callUpstream = (ch: ChannelTarget, operation: VendorOperation, describe: string, send: () => Promise<UpstreamAnswer>) =>
  callVendor(ch, operation, describe, send);

/**
 * Our own body, with the channel's fixed extra parameters under it and the model renamed when the channel maps it
 * (the art suite's body carries no model: its path names it).
 */
function gatewayBody(ch: ChannelTarget, req: NormalizedRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { ...(ch.settings.body ?? {}), ...req.upstreamBody };
  if (typeof body.model === 'string') body.model = upstreamModelOf(ch, req);
  return body;
}

/** Art suite tasks are read in their native shape (spec 2.3: unwrapped, MODAL, grid, description). */
async function pollArtgen(client: UpstreamHttp, ch: ChannelTarget, upstreamTaskId: string): Promise<UpstreamPoll> {
  const path = `${ARTGEN_NATIVE_PATH}/${encodeURIComponent(upstreamTaskId)}`;
  const describe = `upstream ${ch.name} GET ${ARTGEN_NATIVE_PATH}/${truncate(upstreamTaskId, 80)}`;
  const res = await callUpstream(ch, 'poll', describe, () => client.get(joinUrl(ch.baseUrl, path), headersFor(ch)));
  if (!isObj(res.data)) throw new UpstreamError(`${describe}: answer without a task object`, true, res.status, 'server');
  return mapArtgenNative(res.data, describe);
}

/** Task id from acknowledgement shape A (`data[0].task_id`), B or C (`data.id`), or the art suite's `data.task_id`. */
export function parseAckTaskId(body: unknown): string | undefined {
  if (!isObj(body)) return undefined;
  const data = body.data;
  if (Array.isArray(data)) {
    const first: unknown = data[0];
    if (isObj(first) && typeof first.task_id === 'string' && first.task_id) return first.task_id;
    return undefined;
  }
  if (isObj(data) && typeof data.id === 'string' && data.id) return data.id;
  if (isObj(data) && typeof data.task_id === 'string' && data.task_id) return data.task_id;
  return undefined;
}

const STATUS_ALIASES: Record<string, UpstreamStatus> = {
  pending: 'pending',
  submitted: 'pending',
  queued: 'pending',
  processing: 'processing',
  in_progress: 'processing',
  running: 'processing',
  completed: 'completed',
  succeeded: 'completed',
  success: 'completed',
  failed: 'failed',
  failure: 'failed',
};

/** Maps the unified task of spec 2.2 (the `data` of `GET /v1/tasks/<id>`) to an UpstreamPoll. */
export function mapUnifiedTask(data: Record<string, unknown>, describe = 'upstream task'): UpstreamPoll {
  const raw = typeof data.status === 'string' ? data.status.toLowerCase() : '';
  const status = STATUS_ALIASES[raw];
  if (!status) throw new UpstreamError(`${describe}: unrecognized status ${truncate(JSON.stringify(data.status) ?? '', 40)}`, true, undefined, 'server');
  const p = Number(data.progress);
  const progress = status === 'completed' ? 100 : Number.isFinite(p) ? Math.max(0, Math.min(100, Math.round(p))) : 0;
  const poll: UpstreamPoll = { status, progress };
  if (status === 'completed' && isObj(data.result)) poll.result = mapResult(data.result);
  if (status === 'failed') {
    const e = isObj(data.error) ? data.error : {};
    const message = typeof e.message === 'string' && e.message ? e.message : 'Generation failed';
    const type = typeof e.type === 'string' && e.type ? e.type : undefined;
    poll.error = { message: truncate(message, 1000), ...(type ? { type } : {}), moderation: isModerationFailure(type, message) };
  }
  return poll;
}

/** Keeps only the known result fields, with the types the spec gives them (an upstream may send anything). */
function mapResult(r: Record<string, unknown>): TaskResult {
  const out: TaskResult = {};
  if (Array.isArray(r.images)) out.images = mapImages(r.images);
  if (Array.isArray(r.videos)) out.videos = mapVideos(r.videos);
  for (const k of ['assets', 'usable_assets'] as const) {
    const list = r[k];
    if (Array.isArray(list)) out[k] = mapAssets(list);
  }
  if (typeof r.text === 'string') out.text = r.text;
  return out;
}

function mapImages(list: unknown[]): NonNullable<TaskResult['images']> {
  return list
    .filter(isObj)
    .filter((i) => typeof i.url === 'string')
    .map((i) => ({
      url: i.url as string,
      ...(typeof i.width === 'number' ? { width: i.width } : {}),
      ...(typeof i.height === 'number' ? { height: i.height } : {}),
      ...(typeof i.format === 'string' ? { format: i.format } : {}),
    }));
}

function mapVideos(list: unknown[]): NonNullable<TaskResult['videos']> {
  return list.filter(isObj).flatMap((v) => {
    const urls = Array.isArray(v.url) ? v.url.filter((u): u is string => typeof u === 'string') : typeof v.url === 'string' ? [v.url] : [];
    if (urls.length === 0) return [];
    return [
      { url: urls, expires_at: typeof v.expires_at === 'number' ? v.expires_at : 0, ...(typeof v.duration === 'number' ? { duration: v.duration } : {}) },
    ];
  });
}

function mapAssets(list: unknown[]): NonNullable<TaskResult['assets']> {
  return list
    .filter(isObj)
    .filter((a) => typeof a.asset_id === 'string')
    .map((a) => ({
      asset_id: a.asset_id as string,
      asset_url: typeof a.asset_url === 'string' ? a.asset_url : `asset://${String(a.asset_id)}`,
      status: typeof a.status === 'string' ? a.status : 'Active',
      ...(typeof a.reason === 'string' && a.reason ? { reason: truncate(a.reason, 500) } : {}),
    }));
}
