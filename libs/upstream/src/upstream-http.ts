import { Agent, request } from 'undici';
import { currentRoute } from './channel-overrides';

/** An upstream's answer: its status and its body, parsed as JSON when it is JSON (else the text, or undefined). */
export interface UpstreamAnswer {
  status: number;
  data: unknown;
  /** The `Retry-After` header, when the answer had one (seconds or an HTTP date). */
  retryAfter?: string;
}

/** The HTTP client of the task adapters: every status comes back as an answer; only transport failures throw. */
export interface UpstreamHttp {
  get(url: string, headers: Record<string, string>): Promise<UpstreamAnswer>;
  post(url: string, body: unknown, headers: Record<string, string>): Promise<UpstreamAnswer>;
  delete(url: string, headers: Record<string, string>): Promise<UpstreamAnswer>;
  /** fal cancels a queued request with PUT. */
  put(url: string, body: unknown, headers: Record<string, string>): Promise<UpstreamAnswer>;
}

/** A transport failure, with a code `classifyHttpFailure` knows (ECONNREFUSED, ETIMEDOUT, …). Never holds headers. */
export class UpstreamTransportError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'UpstreamTransportError';
  }
}

export interface UpstreamHttpOptions {
  /** Per request, connect to last byte. */
  timeoutMs: number;
  /** Largest response body accepted; more is a transport failure `ERESPONSETOOLARGE`. */
  maxResponseBytes: number;
  /** Keep-alive connections per upstream origin. */
  maxSockets: number;
  userAgent: string;
}

/**
 * undici with one keep-alive pool per origin (not axios + node:http: a worker polling thousands of tasks spent ~20 %
 * of its CPU in axios's config merging and node's HTTP client, docs/benchmarks.md "Worker capacity"). No redirect
 * is followed; a status is never an exception; the body is read up to the cap and parsed once.
 */
export function createUpstreamHttp(opts: UpstreamHttpOptions): UpstreamHttp {
  const dispatcher = new Agent({
    connections: opts.maxSockets,
    keepAliveTimeout: 30_000,
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    connect: { timeout: opts.timeoutMs },
  });
  const base = { 'user-agent': opts.userAgent, accept: 'application/json' };

  async function send(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, headers: Record<string, string>, body?: unknown): Promise<UpstreamAnswer> {
    // a channel with a proxy or timeouts of its own (channel-overrides.ts): its dispatcher and its bound
    const route = currentRoute();
    const timeoutMs = route?.timeoutMs ?? opts.timeoutMs;
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const res = await request(url, {
        method,
        dispatcher: route?.dispatcher ?? dispatcher,
        signal,
        ...(route?.timeoutMs === undefined ? {} : { headersTimeout: timeoutMs, bodyTimeout: timeoutMs }),
        headers: body === undefined ? { ...base, ...headers } : { ...base, 'content-type': 'application/json', ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const declared = Number(res.headers['content-length']);
      if (declared > opts.maxResponseBytes) {
        // destroy() without a listener would surface undici's abort as an unhandled 'error' event
        res.body.on('error', () => undefined).destroy();
        throw new UpstreamTransportError('ERESPONSETOOLARGE', 'response larger than the size cap');
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > opts.maxResponseBytes) {
          // leaving the loop closes the body (the iterator's return)
          throw new UpstreamTransportError('ERESPONSETOOLARGE', 'response larger than the size cap');
        }
        chunks.push(chunk as Buffer);
      }
      const text = Buffer.concat(chunks).toString('utf8');
      const retryAfter = res.headers['retry-after'];
      return { status: res.statusCode, data: parseBody(text), ...(typeof retryAfter === 'string' ? { retryAfter } : {}) };
    } catch (e) {
      if (e instanceof UpstreamTransportError) throw e;
      throw transportError(e, signal);
    }
  }

  return {
    get: (url, headers) => send('GET', url, headers),
    post: (url, body, headers) => send('POST', url, headers, body ?? {}),
    delete: (url, headers) => send('DELETE', url, headers),
    put: (url, body, headers) => send('PUT', url, headers, body ?? {}),
  };
}

/** `Retry-After` (delta seconds or an HTTP date) in ms from `now`, bounded to an hour; undefined when absent or bad. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const secs = Number(value);
  const ms = Number.isFinite(secs) ? secs * 1000 : Date.parse(value) - now;
  if (!Number.isFinite(ms) || ms < 0) return undefined;
  return Math.min(ms, 3_600_000);
}

function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** undici's and the socket's errors as one code; the message names no header (the request is not in it). */
function transportError(e: unknown, signal: AbortSignal): UpstreamTransportError {
  const err = e as { code?: unknown; name?: unknown; message?: unknown; cause?: { code?: unknown } };
  if (signal.aborted) return new UpstreamTransportError('ETIMEDOUT', 'timed out');
  // a channel's proxy refusing the tunnel (undici's message names the status only, never the proxy's credentials)
  const proxyStatus = /^Proxy response \((\d{3})\)/.exec(typeof err.message === 'string' ? err.message : '')?.[1];
  if (proxyStatus) return new UpstreamTransportError('EPROXY', `the proxy refused the tunnel (HTTP ${proxyStatus})`);
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return new UpstreamTransportError('ETIMEDOUT', 'timed out');
  const code = typeof err.code === 'string' ? err.code : typeof err.cause?.code === 'string' ? err.cause.code : 'unknown';
  const timeouts = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);
  return new UpstreamTransportError(timeouts.has(code) ? 'ETIMEDOUT' : code, `network error ${code}`);
}
