import { UpstreamError } from '@gmg/errors';
import { SpanKind, upstreamDuration, upstreamRequests, withSpan } from '@gmg/observability';
import type { ChannelTarget } from './adapter';
import { mappedFailure, onChannelRoute } from './channel-overrides';
import { classifyHttpFailure, scrubSecret } from './upstream-failure';
import { UpstreamTransportError, createUpstreamHttp, retryAfterMs, type UpstreamAnswer, type UpstreamHttp } from './upstream-http';
import { isObj, str } from './json-value';

export type VendorOperation = 'submit' | 'poll' | 'cancel' | 'download';

/** The error a vendor put in a non-2xx body, as far as the vendor's shape tells (type: a machine word; message). */
export interface VendorError {
  type?: string;
  /** A finer machine word beside `type` (OpenAI: `type: invalid_request_error`, `code: moderation_blocked`). */
  code?: string;
  message?: string;
}
export type VendorErrorReader = (body: unknown) => VendorError;

/** `{error: {type, message}}` (this API, OpenAI), `{error: "…"}`, `{detail: "…"}` (fal, Replicate, BFL), `{message}`. */
export const readCommonError: VendorErrorReader = (body) => {
  if (!isObj(body)) return { message: typeof body === 'string' ? body.slice(0, 300) : undefined };
  if (isObj(body.error)) return { type: str(body.error.type) ?? str(body.error.code), code: str(body.error.code), message: str(body.error.message) };
  const detail = Array.isArray(body.detail) ? JSON.stringify(body.detail) : str(body.detail);
  return { type: str(body.type) ?? str(body.code), message: str(body.error) ?? detail ?? str(body.message) ?? str(body.title) };
};

export const joinUrl = (base: string, path: string): string => `${base.replace(/\/+$/, '')}${path}`;

/** The HTTP client of a protocol: one undici pool per origin, bounded in time and answer size. */
export function createVendorHttp(opts: { timeoutMs: number; maxResponseBytes?: number; maxSockets?: number; userAgent: string }): UpstreamHttp {
  return createUpstreamHttp({
    timeoutMs: opts.timeoutMs,
    maxResponseBytes: opts.maxResponseBytes ?? 1_048_576,
    maxSockets: opts.maxSockets ?? 64,
    userAgent: opts.userAgent,
  });
}

/**
 * One vendor call, counted and timed by channel name and operation (`outcome`: ok or the failure kind), in its own
 * client span. A transport failure or a non-2xx answer becomes a classified UpstreamError (retry policy:
 * upstream-failure.ts, then the channel's `status_map`), with the vendor's Retry-After carried on; the channel's key
 * is scrubbed from any message. A channel's proxy and timeouts (channel-overrides.ts) apply to the call.
 */
export async function callVendor(
  ch: ChannelTarget,
  operation: VendorOperation,
  describe: string,
  send: () => Promise<UpstreamAnswer>,
  readError: VendorErrorReader = readCommonError,
): Promise<UpstreamAnswer> {
  const labels = { channel: ch.name, operation };
  const end = upstreamDuration.startTimer(labels);
  return withSpan(`upstream ${operation}`, { kind: SpanKind.CLIENT, attributes: { 'gmg.channel': ch.name } }, async () => {
    try {
      const res = await sendClassified(ch, describe, () => onChannelRoute(ch.settings, operation, send), readError);
      upstreamRequests.inc({ ...labels, outcome: 'ok' });
      return res;
    } catch (e) {
      upstreamRequests.inc({ ...labels, outcome: e instanceof UpstreamError ? (e.kind ?? 'error') : 'error' });
      throw e;
    } finally {
      end();
    }
  });
}

async function sendClassified(ch: ChannelTarget, describe: string, send: () => Promise<UpstreamAnswer>, readError: VendorErrorReader): Promise<UpstreamAnswer> {
  let res: UpstreamAnswer;
  try {
    res = await send();
  } catch (e) {
    // Only the code travels on: the HTTP client's own error could hold the request (and its auth header).
    const code = e instanceof UpstreamTransportError ? e.code : 'unknown';
    if (code === 'ERESPONSETOOLARGE') throw new UpstreamError(`${describe}: response larger than the size cap`, true, undefined, 'server');
    throw classifyHttpFailure({ code }, describe);
  }
  if (res.status >= 200 && res.status < 300) return res;
  const err = readError(res.data);
  const failure = classifyHttpFailure(
    {
      status: res.status,
      errorType: err.type,
      ...(err.code !== undefined && err.code !== err.type ? { errorCode: err.code } : {}),
      errorMessage: err.message === undefined ? undefined : scrubSecret(err.message, ch.apiKey),
      retryAfterMs: retryAfterMs(res.retryAfter),
    },
    describe,
  );
  throw mappedFailure(ch.settings.status_map, failure) ?? failure;
}

/** Headers of every call on a channel: the channel's extra headers under the protocol's own (auth wins). */
export const withChannelHeaders = (ch: ChannelTarget, own: Record<string, string>): Record<string, string> => ({ ...(ch.settings.headers ?? {}), ...own });
