import http from 'node:http';
import https from 'node:https';
import axios from 'axios';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import { DomainError } from '@gmg/errors';

/**
 * Agents for fetching USER-SUPPLIED URLs: every connection is checked after DNS resolution, so loopback, private,
 * link-local (cloud metadata 169.254.169.254), unspecified and other non-unicast addresses are refused — also on
 * each redirect hop, because the redirect follower connects through the same agents.
 */
export function createSafeAgents(): { httpAgent: http.Agent; httpsAgent: https.Agent } {
  const opts = { allowPrivateIPAddress: false, allowMetaIPAddress: false, keepAlive: false };
  return { httpAgent: new RequestFilteringHttpAgent(opts), httpsAgent: new RequestFilteringHttpsAgent(opts) };
}

const safeAgents = createSafeAgents();
const plainAgents = { httpAgent: new http.Agent(), httpsAgent: new https.Agent() };

export interface FetchUserMediaOptions {
  /** Whole request, connect to last byte. */
  timeoutMs: number;
  /** Largest body accepted; a larger one is aborted while streaming. */
  maxBytes: number;
  /**
   * URL prefixes of our own media (upload links) fetched WITHOUT the address filter, e.g. `http://127.0.0.1:8080/files/`.
   * Matched on origin and path, so `http://ours@evil/` or `http://ours.evil/` do not pass.
   */
  allowPrefixes?: readonly string[];
  /** Redirect hops followed (default 3). */
  maxRedirects?: number;
}

export interface FetchedMedia {
  body: Buffer;
  contentType?: string;
  /** The URL after redirects. */
  finalUrl: string;
}

function parseHttpUrl(u: string): URL | undefined {
  try {
    const url = new URL(u);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

export function isAllowedPrefix(url: URL, prefixes: readonly string[]): boolean {
  if (url.username || url.password) return false;
  return prefixes.some((p) => {
    const prefix = parseHttpUrl(p);
    return prefix !== undefined && prefix.origin === url.origin && url.pathname.startsWith(prefix.pathname);
  });
}

const fail = (message: string, details: Record<string, unknown> = {}): DomainError =>
  new DomainError('invalid_request', message, details);

/**
 * Fetches a media file a user pointed us at, with a timeout and a size cap. Refuses non-HTTP(S) URLs and, except
 * for `allowPrefixes`, any URL that resolves to a non-public address. Failures are DomainError invalid_request
 * with a message a person can act on (the URL itself is not echoed: it may carry tokens).
 */
export async function fetchUserMedia(rawUrl: string, opts: FetchUserMediaOptions): Promise<FetchedMedia> {
  const url = parseHttpUrl(rawUrl);
  if (!url) throw fail('media URL must be an absolute http(s) URL', { rule: 'url' });
  const trusted = isAllowedPrefix(url, opts.allowPrefixes ?? []);
  const agents = trusted ? plainAgents : safeAgents;
  try {
    const res = await axios.get<ArrayBuffer>(url.toString(), {
      ...agents,
      responseType: 'arraybuffer',
      timeout: opts.timeoutMs,
      signal: AbortSignal.timeout(opts.timeoutMs),
      maxContentLength: opts.maxBytes,
      maxRedirects: opts.maxRedirects ?? 3,
      proxy: false,
      decompress: true,
      headers: { 'User-Agent': 'gmg-media-fetch/1', Accept: '*/*' },
    });
    const finalUrl = (res.request as { res?: { responseUrl?: string } } | undefined)?.res?.responseUrl ?? url.toString();
    const ct = res.headers['content-type'];
    return { body: Buffer.from(res.data), contentType: typeof ct === 'string' ? ct : undefined, finalUrl };
  } catch (e) {
    throw describeFetchError(e, opts);
  }
}

function describeFetchError(e: unknown, opts: FetchUserMediaOptions): DomainError {
  const err = e as { response?: { status?: number }; code?: string; message?: string };
  const message = err.message ?? '';
  if (err.response?.status) return fail(`media URL answered HTTP ${err.response.status}`, { rule: 'fetch' });
  if (message.includes('maxContentLength')) return fail(`media file is larger than ${opts.maxBytes} bytes`, { rule: 'max-bytes' });
  if (message.includes('is not allowed')) return fail('media URL points to a private or reserved address', { rule: 'ssrf' });
  if (err.code === 'ECONNABORTED' || err.code === 'ERR_CANCELED' || err.code === 'ETIMEDOUT')
    return fail(`media URL did not answer within ${opts.timeoutMs} ms`, { rule: 'timeout' });
  if (err.code === 'ERR_FR_TOO_MANY_REDIRECTS') return fail('media URL redirects too many times', { rule: 'redirects' });
  return fail(`media URL could not be fetched (${err.code ?? 'network error'})`, { rule: 'fetch' });
}
