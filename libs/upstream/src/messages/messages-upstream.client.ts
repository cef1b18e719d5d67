import { Pool, type Dispatcher } from 'undici';

/** Where a messages call goes: a channel of protocol `messages`. */
export interface MessagesTarget {
  baseUrl: string;
  /** Secret: sent as `x-api-key`, never logged. */
  apiKey: string;
  /** The header name the upstream reads the protocol version from (the vendor's own: `anthropic-version`). */
  versionHeader: string;
}

export interface MessagesCall {
  target: MessagesTarget;
  /** The client's protocol version (a date), sent under the channel's version header. */
  version: string;
  /** The client's body, byte for byte. */
  body: Buffer;
  /** Other request headers passed through (e.g. `anthropic-beta`). */
  headers?: Record<string, string>;
  signal: AbortSignal;
}

export interface MessagesAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** A Readable; reading it pulls from the socket (backpressure), destroying it frees the connection. */
  body: Dispatcher.ResponseData['body'];
}

export interface MessagesClientOptions {
  /** Time to the response headers (a stream's first byte is its headers). */
  headersTimeoutMs?: number;
  /** Longest silence between two body chunks (upstreams ping every few seconds while streaming). */
  bodyTimeoutMs?: number;
  /** Idle keep-alive connections are closed after this. */
  keepAliveTimeoutMs?: number;
}

/**
 * The messages channel client: one undici keep-alive Pool per upstream origin (connections are reused across
 * calls, with no per-call TCP/TLS handshake), no connection limit (a stream holds its connection for its whole
 * life). An aborted signal destroys the upstream request, so the upstream sees the close at once.
 */
export class MessagesUpstreamClient {
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly opts: MessagesClientOptions = {}) {}

  async send(call: MessagesCall): Promise<MessagesAnswer> {
    const url = new URL(call.target.baseUrl);
    const res = await this.poolFor(url.origin).request({
      method: 'POST',
      path: `${url.pathname.replace(/\/+$/, '')}/v1/messages`,
      headers: {
        ...call.headers,
        'content-type': 'application/json',
        'x-api-key': call.target.apiKey,
        [call.target.versionHeader]: call.version,
      },
      body: call.body,
      signal: call.signal,
    });
    return { status: res.statusCode, headers: res.headers, body: res.body };
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }

  private poolFor(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        headersTimeout: this.opts.headersTimeoutMs ?? 120_000,
        bodyTimeout: this.opts.bodyTimeoutMs ?? 120_000,
        keepAliveTimeout: this.opts.keepAliveTimeoutMs ?? 30_000,
        pipelining: 1,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }
}
