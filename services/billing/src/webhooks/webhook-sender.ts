import axios from 'axios';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';

export interface WebhookSenderOptions {
  /**
   * Local mode only (WEBHOOK_ALLOW_INSECURE): loopback and private addresses may be called. Off, every connection is
   * checked after DNS resolution and a non-public address (loopback, private, link-local/metadata…) is refused.
   */
  allowPrivate: boolean;
  /** Whole request, connect to last byte. */
  timeoutMs: number;
  /** Largest response body read; a larger one aborts the attempt (the receiver only needs to answer 2xx). */
  maxResponseBytes: number;
}

/** What one POST did: a status (any, 2xx means delivered) or the error that prevented one. */
export interface WebhookSendResult {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/**
 * POSTs webhook bodies to client URLs through the SSRF-filtering agents: the address is checked at connect (so a
 * name re-pointed to a private address after submit is still refused), redirects are not followed (a 3xx is an
 * answer, not a delivery), with a timeout and a response size cap. No proxy from the environment.
 */
export function createWebhookSender(opts: WebhookSenderOptions): (url: string, body: string, headers: Record<string, string>) => Promise<WebhookSendResult> {
  const agentOpts = { allowPrivateIPAddress: opts.allowPrivate, allowMetaIPAddress: opts.allowPrivate, keepAlive: false };
  const httpAgent = new RequestFilteringHttpAgent(agentOpts);
  const httpsAgent = new RequestFilteringHttpsAgent(agentOpts);
  return async (url, body, headers) => {
    const started = Date.now();
    try {
      const res = await axios.post(url, body, {
        httpAgent,
        httpsAgent,
        headers: { 'Content-Type': 'application/json', 'User-Agent': 'gmg-webhook/1', ...headers },
        timeout: opts.timeoutMs,
        signal: AbortSignal.timeout(opts.timeoutMs),
        maxRedirects: 0,
        maxContentLength: opts.maxResponseBytes,
        proxy: false,
        responseType: 'text',
        transformResponse: (d: unknown) => d,
        validateStatus: () => true,
      });
      return { statusCode: res.status, error: null, durationMs: Date.now() - started };
    } catch (e) {
      return { statusCode: null, error: describe(e, opts), durationMs: Date.now() - started };
    }
  };
}

/** A short reason for the delivery log (never the URL: it may carry a token). */
function describe(e: unknown, opts: WebhookSenderOptions): string {
  const err = e as { code?: string; message?: string };
  const message = err.message ?? '';
  if (message.includes('is not allowed')) return 'refused: the callback address is private or reserved';
  if (message.includes('maxContentLength')) return `response larger than ${opts.maxResponseBytes} bytes`;
  if (err.code === 'ECONNABORTED' || err.code === 'ERR_CANCELED' || err.code === 'ETIMEDOUT') return `no answer within ${opts.timeoutMs} ms`;
  return `network error (${err.code ?? 'unknown'})`;
}
