import { AsyncLocalStorage } from 'node:async_hooks';
import { Agent, ProxyAgent, type Dispatcher } from 'undici';
import { UpstreamError } from '@gmg/errors';
import type { ChannelSettings } from './adapter';

/**
 * Per-channel overrides of the transport and of the failure policy (docs/upstreams.md, "Per-channel overrides"),
 * beside `settings.headers` and `settings.body`:
 * - `proxy`: an outbound HTTP(S) proxy URL (undici ProxyAgent; credentials in the URL are a secret);
 * - `timeouts`: `connect_ms`, `request_ms`, `poll_ms` over the process defaults;
 * - `status_map`: a vendor status (`429`) or class (`5xx`) → `retry` | `failover` | `fail`.
 * A channel without any of them costs nothing: every reader checks for the key first.
 */
export type ChannelTimeouts = NonNullable<ChannelSettings['timeouts']>;
export type StatusAction = 'retry' | 'failover' | 'fail';
type StatusMap = Readonly<Record<string, StatusAction>>;

/** The overrides a chat call reads (structurally what @gmg/db selects for a chat channel); absent when it has none. */
export interface ChatOverrides {
  headers?: Record<string, string>;
  body?: Record<string, unknown>;
  proxy?: string;
  timeouts?: ChannelTimeouts;
  status_map?: StatusMap;
}

/**
 * Body fields the gateway owns on chat calls (billing reads them: the model priced, whether the answer is a stream,
 * the stream's usage, the hold's token bound): `settings.body` never sets them, on any protocol.
 */
export const RESERVED_BODY_FIELDS = ['model', 'stream', 'stream_options', 'max_tokens', 'max_completion_tokens'] as const;

/** The action a channel maps `status` to: the exact code first, then its class (`4xx`, `5xx`). */
export function statusActionOf(map: StatusMap | undefined, status: number): StatusAction | undefined {
  if (map === undefined) return undefined;
  return map[String(status)] ?? map[`${Math.floor(status / 100)}xx`];
}

/**
 * A vendor failure as the channel's `status_map` reads it (undefined: the built-in classification stands).
 * `retry` and `failover` are retryable; a kind the built-in reading gave as retryable (quota, channel, timeout,
 * server) is kept, so a refused key is still set aside; a client's error mapped explicitly becomes `server` (it
 * counts against the channel). `failover` carries a Retry-After of 0: the step machine leaves the channel at once
 * when another one is usable. `fail` is final (`bad_request`: the task fails and is refunded, the channel is not blamed).
 */
export function mappedFailure(map: StatusMap | undefined, builtIn: UpstreamError): UpstreamError | undefined {
  // a content refusal is the request's under any map: another channel would refuse it too
  if (map === undefined || builtIn.status === undefined || builtIn.kind === 'moderation') return undefined;
  const action = statusActionOf(map, builtIn.status);
  if (action === undefined) return undefined;
  if (action === 'fail') return new UpstreamError(builtIn.message, false, builtIn.status, 'bad_request');
  const kind = builtIn.retryable ? builtIn.kind : 'server';
  return new UpstreamError(builtIn.message, true, builtIn.status, kind, action === 'failover' ? 0 : builtIn.retryAfterMs);
}

/** The proxy URL with its password (or a lone user token) replaced: what answers and logs may show. */
export function redactProxyUrl(url: string): string {
  try {
    const u = new URL(url);
    if (!u.username && !u.password) return url;
    if (u.password) u.password = '***';
    else u.username = '***';
    return u.href;
  } catch {
    return '[invalid proxy url]';
  }
}

/** True when `url` is the redacted form of `stored` (an answer sent back as it was): the stored secret stays. */
export function isRedactedFormOf(url: unknown, stored: unknown): boolean {
  return typeof url === 'string' && typeof stored === 'string' && url.includes('***') && redactProxyUrl(stored) === url;
}

/** The transport of one call on a channel with a proxy or its own timeouts (undefined fields: the client's defaults). */
export interface CallRoute {
  dispatcher?: Dispatcher;
  timeoutMs?: number;
}

const KEEP_ALIVE_MS = 30_000;
/** One dispatcher per distinct proxy URL and connect timeout, shared by every client of the process. */
const dispatchers = new Map<string, Dispatcher>();

/**
 * The dispatcher of a channel with a proxy or a connect timeout of its own; undefined otherwise (the caller's own
 * pool). A proxy tunnels with CONNECT (https and http targets alike); keep-alive connections per origin behind it.
 */
export function channelDispatcher(settings: Readonly<Pick<ChannelSettings, 'proxy' | 'timeouts'>>): Dispatcher | undefined {
  const proxy = settings.proxy;
  const connectMs = settings.timeouts?.connect_ms;
  if (proxy === undefined && connectMs === undefined) return undefined;
  const key = `${connectMs ?? ''}|${proxy ?? ''}`;
  let d = dispatchers.get(key);
  if (!d) {
    const connect = connectMs === undefined ? {} : { timeout: connectMs };
    d =
      proxy === undefined
        ? new Agent({ keepAliveTimeout: KEEP_ALIVE_MS, connect })
        : new ProxyAgent({ uri: proxy, keepAliveTimeout: KEEP_ALIVE_MS, proxyTls: connect });
    dispatchers.set(key, d);
  }
  return d;
}

/** Closes every channel dispatcher (a process's shutdown); a later call opens new ones. */
export async function closeChannelDispatchers(): Promise<void> {
  const all = [...dispatchers.values()];
  dispatchers.clear();
  await Promise.all(all.map((d) => d.close().catch(() => undefined)));
}

/** Set by callVendor around a call on a channel with a proxy or timeouts; read by the task HTTP client. */
const routes = new AsyncLocalStorage<CallRoute>();

/** Runs `send` with the channel's route for `operation` when the channel has one; else `send` as it is. */
export function onChannelRoute<T>(settings: Readonly<ChannelSettings>, operation: string, send: () => Promise<T>): Promise<T> {
  if (settings.proxy === undefined && settings.timeouts === undefined) return send();
  const t = settings.timeouts;
  const timeoutMs = operation === 'poll' ? t?.poll_ms : operation === 'download' ? undefined : t?.request_ms;
  return routes.run({ dispatcher: channelDispatcher(settings), timeoutMs }, send);
}

/** The route of the call running now (inside onChannelRoute), if any. */
export const currentRoute = (): CallRoute | undefined => routes.getStore();

/**
 * A chat request body with the channel's fixed parameters: the request's own fields win, and the gateway's own
 * (RESERVED_BODY_FIELDS) are never taken from the channel. The same bytes when the body is not a JSON object.
 */
export function withFixedBody(body: Buffer, fixed: Record<string, unknown>): Buffer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return body;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return body;
  const own = parsed as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fixed)) if (!(k in own) && !(RESERVED_BODY_FIELDS as readonly string[]).includes(k)) out[k] = v;
  return Object.keys(out).length === 0 ? body : Buffer.from(JSON.stringify({ ...own, ...out }));
}
