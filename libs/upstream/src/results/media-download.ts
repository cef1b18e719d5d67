import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { Agent, request, type Dispatcher } from 'undici';
import { isPrivateAddress } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import type { HostVerdict } from '../public-host';

/** The public-host filter (PublicHostResolver): a host another than the channel's must resolve to public addresses only. */
export interface HostCheck {
  checkUrl(url: string): Promise<HostVerdict>;
}

export interface DownloadOptions {
  publicHosts: HostCheck;
  timeoutMs: number;
  userAgent: string;
  /** Redirects followed at most, each hop's host checked again. */
  maxRedirects?: number;
}

/** An open download: its body (undici's stream) and its declared length, when the answer had one. */
export interface OpenDownload {
  body: Dispatcher.ResponseData['body'];
  declaredBytes?: number;
}

export interface Downloader {
  /**
   * GETs `url`, following at most `maxRedirects` redirects; `headers` go to the first URL's origin only. `via`: the
   * channel's proxy (channel-overrides.ts): every hop goes through it (the public-host filter still checks each
   * hop's name first; the proxy resolves it).
   */
  open(url: string, headers: Record<string, string>, trustedHost: string, signal: AbortSignal, via?: Dispatcher): Promise<OpenDownload>;
  close(): Promise<void>;
}

const PRIVATE_CODE = 'EPRIVATEADDRESS';

/**
 * Checked again when connecting (a name can resolve to a public address for the filter and to a private one a
 * moment later: DNS rebinding): the public dispatcher refuses to connect to any private address.
 */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    const cb = callback as (e: NodeJS.ErrnoException | null, a?: string | LookupAddress[], f?: number) => void;
    if (err) return cb(err);
    if (addresses.length === 0 || addresses.some((a) => isPrivateAddress(a.address))) {
      return cb(Object.assign(new Error(`${hostname} resolves to a non-public address`), { code: PRIVATE_CODE }));
    }
    if (options.all) return cb(null, addresses);
    cb(null, addresses[0]!.address, addresses[0]!.family);
  });
};

/**
 * Downloads of kept results: one keep-alive dispatcher for the channels' own hosts (trusted as the channel is,
 * loopback allowed) and one for every other host, which must pass the public-host filter before each hop and
 * connects to public addresses only. Redirects are followed by hand, a bounded number of times.
 */
export function createDownloader(opts: DownloadOptions): Downloader {
  const agent = (connect: Agent.Options['connect']) =>
    new Agent({ connections: 16, keepAliveTimeout: 30_000, headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs, connect });
  const trusted = agent({ timeout: opts.timeoutMs });
  const open = agent({ timeout: opts.timeoutMs, lookup: publicOnlyLookup });
  const maxRedirects = opts.maxRedirects ?? 3;

  async function checkHost(u: URL, trustedHost: string): Promise<Dispatcher> {
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw new UpstreamError(`result link is not http(s) (${u.protocol})`, false, undefined, 'bad_request');
    if (u.host === trustedHost) return trusted;
    const v = await opts.publicHosts.checkUrl(u.href);
    if (v.kind === 'private') throw new UpstreamError(`result link host ${u.hostname} is not public`, false, undefined, 'bad_request');
    if (v.kind === 'unresolved') throw new UpstreamError(`result link host ${u.hostname} did not resolve (${v.reason})`, true, undefined, 'network');
    return open;
  }

  return {
    async open(url, headers, trustedHost, signal, via) {
      let u = new URL(url);
      const origin = u.origin;
      for (let hop = 0; ; hop++) {
        const checked = await checkHost(u, trustedHost);
        const dispatcher = via ?? checked;
        // The channel's key (or whatever the download needs) never follows a redirect to another origin.
        const own = u.origin === origin ? headers : {};
        const res = await request(u, { method: 'GET', dispatcher, signal, maxRedirections: 0, headers: { 'user-agent': opts.userAgent, ...own } });
        const location = res.headers.location;
        if (res.statusCode >= 300 && res.statusCode < 400 && typeof location === 'string') {
          await res.body.dump().catch(() => undefined);
          if (hop >= maxRedirects) throw new UpstreamError(`result link redirected more than ${maxRedirects} times`, false, res.statusCode, 'bad_request');
          u = new URL(location, u);
          continue;
        }
        if (res.statusCode >= 200 && res.statusCode < 300) {
          const declared = Number(res.headers['content-length']);
          return { body: res.body, declaredBytes: Number.isFinite(declared) && declared >= 0 ? declared : undefined };
        }
        await res.body.dump().catch(() => undefined);
        throw statusError(res.statusCode);
      }
    },
    async close() {
      await Promise.all([trusted.close(), open.close()]);
    },
  };
}

/**
 * A vendor's file host answering an error: 5xx, 408 and 429 may pass (retryable); any other answer — an expired
 * link's 403, a 404 — will not change by asking again (final).
 */
function statusError(status: number): UpstreamError {
  const msg = `Upstream result could not be downloaded (HTTP ${status})`;
  if (status === 429) return new UpstreamError(msg, true, status, 'quota');
  if (status === 408) return new UpstreamError(msg, true, status, 'timeout');
  if (status >= 500) return new UpstreamError(msg, true, status, 'server');
  return new UpstreamError(msg, false, status, 'bad_request');
}

/** A transport failure of a download as an UpstreamError (retryable), or final for a refused private address. */
export function downloadFailure(e: unknown, timedOut: boolean): UpstreamError {
  if (e instanceof UpstreamError) return e;
  if (timedOut) return new UpstreamError('result download timed out', true, undefined, 'timeout');
  const err = e as { code?: unknown; cause?: { code?: unknown } };
  const code = typeof err.code === 'string' ? err.code : typeof err.cause?.code === 'string' ? err.cause.code : 'unknown';
  if (code === PRIVATE_CODE) return new UpstreamError('result link host resolves to a non-public address', false, undefined, 'bad_request');
  if (code.includes('TIMEOUT')) return new UpstreamError('result download timed out', true, undefined, 'timeout');
  return new UpstreamError(`result download failed: network error ${code}`, true, undefined, 'network');
}
