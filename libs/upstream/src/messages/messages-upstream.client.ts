import { Pool, type Dispatcher } from 'undici';
import { channelDispatcher, type ChatOverrides } from '../channel-overrides';

/** Where a chat call goes: a channel of protocol `messages`, or `openai` (chat completions). */
export interface MessagesTarget {
  baseUrl: string;
  /** Secret: sent as `x-api-key` (`messages`) or `Authorization: Bearer` (`openai`), never logged. */
  apiKey: string;
  /** The header name the upstream reads the protocol version from (the vendor's own: `anthropic-version`). */
  versionHeader: string;
  /** `messages` when absent. */
  protocol?: string;
  /** `openai` only: `api-key` sends the key as `api-key: <key>` (Azure-style resellers). */
  authHeader?: string;
  /** The channel's extra headers (under the call's own), proxy and timeouts (channel-overrides.ts); absent: none. */
  overrides?: ChatOverrides;
}

/** The credentials (and, for `messages`, the version) a channel's protocol reads. */
function authOf(t: MessagesTarget, version: string): Record<string, string> {
  if (t.protocol !== 'openai') return { 'x-api-key': t.apiKey, [t.versionHeader]: version };
  return t.authHeader === 'api-key' ? { 'api-key': t.apiKey } : { authorization: `Bearer ${t.apiKey}` };
}

export interface MessagesCall {
  target: MessagesTarget;
  /** The client's protocol version (a date), sent under the channel's version header. */
  version: string;
  /** The client's body, byte for byte. */
  body: Buffer;
  /** Other request headers passed through (e.g. `anthropic-beta`). */
  headers?: Record<string, string>;
  /** Under the channel's base URL; default `/v1/messages` (`/v1/chat/completions` for `openai`; also `/v1/messages/count_tokens`). */
  path?: string;
  /** A streamed call gets its headers at once (short bound); a non-streamed one only with the whole answer. */
  stream?: boolean;
  signal: AbortSignal;
}

export interface MessagesAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** A Readable; reading it pulls from the socket (backpressure), destroying it frees the connection. */
  body: Dispatcher.ResponseData['body'];
}

export interface MessagesClientOptions {
  /** Time to a TCP (and TLS) connection. */
  connectTimeoutMs?: number;
  /** Time to the response headers of a streamed call (a stream's first byte is its headers), and longest silence between two of its chunks. */
  headersTimeoutMs?: number;
  /** Longest silence between two body chunks of a stream (upstreams ping every few seconds while streaming). */
  bodyTimeoutMs?: number;
  /** Time to the headers of a NON-streamed call: the upstream sends them with its whole answer, which can take minutes. */
  answerTimeoutMs?: number;
  /** Idle keep-alive connections are closed after this. */
  keepAliveTimeoutMs?: number;
  /** A pool not used this long is closed (a removed channel's origin does not keep one forever). */
  poolIdleCloseMs?: number;
  now?: () => number;
}

/** Defaults (docs/messages.md, "Timeouts"). */
export const MESSAGES_CLIENT_DEFAULTS = Object.freeze({
  connectTimeoutMs: 5_000,
  headersTimeoutMs: 15_000,
  bodyTimeoutMs: 60_000,
  answerTimeoutMs: 600_000,
  keepAliveTimeoutMs: 30_000,
  poolIdleCloseMs: 300_000,
});

/**
 * The messages channel client: one undici keep-alive Pool per upstream origin (connections are reused across
 * calls, with no per-call TCP/TLS handshake), no connection limit (a stream holds its connection for its whole
 * life). An aborted signal destroys the upstream request, so the upstream sees the close at once. Pools unused
 * for `poolIdleCloseMs` are closed (checked on use, at most once a minute).
 */
export class MessagesUpstreamClient {
  private readonly pools = new Map<string, { pool: Pool; usedAt: number }>();
  private readonly o: Required<Omit<MessagesClientOptions, 'now'>>;
  private readonly now: () => number;
  private sweptAt: number;

  constructor(opts: MessagesClientOptions = {}) {
    this.o = { ...MESSAGES_CLIENT_DEFAULTS, ...Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined)) } as Required<
      Omit<MessagesClientOptions, 'now'>
    >;
    this.now = opts.now ?? Date.now;
    this.sweptAt = this.now();
  }

  async send(call: MessagesCall): Promise<MessagesAnswer> {
    const url = new URL(call.target.baseUrl);
    const o = call.target.overrides;
    const headers = { ...o?.headers, ...call.headers, 'content-type': 'application/json', ...authOf(call.target, call.version) };
    const opts = {
      method: 'POST' as const,
      path: `${url.pathname.replace(/\/+$/, '')}${call.path ?? (call.target.protocol === 'openai' ? '/v1/chat/completions' : '/v1/messages')}`,
      headers,
      body: call.body,
      signal: call.signal,
      headersTimeout: o?.timeouts?.request_ms ?? (call.stream === false ? this.o.answerTimeoutMs : this.o.headersTimeoutMs),
      bodyTimeout: call.stream === false ? this.o.answerTimeoutMs : this.o.bodyTimeoutMs,
    };
    // a channel with a proxy or a connect timeout of its own goes through its shared dispatcher (keyed by both)
    const via = o !== undefined && (o.proxy !== undefined || o.timeouts?.connect_ms !== undefined) ? channelDispatcher(o) : undefined;
    const res = via ? await via.request({ ...opts, origin: url.origin }) : await this.poolFor(url.origin).request(opts);
    return { status: res.statusCode, headers: res.headers, body: res.body };
  }

  /** Origins with an open pool (for tests and metrics). */
  origins(): string[] {
    return [...this.pools.keys()];
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.pool.close()));
    this.pools.clear();
  }

  private poolFor(origin: string): Pool {
    const at = this.now();
    if (at - this.sweptAt >= Math.min(60_000, this.o.poolIdleCloseMs)) this.sweep(at);
    let entry = this.pools.get(origin);
    if (!entry) {
      entry = {
        pool: new Pool(origin, {
          connect: { timeout: this.o.connectTimeoutMs },
          headersTimeout: this.o.headersTimeoutMs,
          bodyTimeout: this.o.bodyTimeoutMs,
          keepAliveTimeout: this.o.keepAliveTimeoutMs,
          pipelining: 1,
        }),
        usedAt: at,
      };
      this.pools.set(origin, entry);
    }
    entry.usedAt = at;
    return entry.pool;
  }

  /** Closes pools idle past the bound; a pool still streaming finishes its requests first (Pool.close waits for them). */
  private sweep(at: number): void {
    this.sweptAt = at;
    for (const [origin, e] of this.pools) {
      if (at - e.usedAt < this.o.poolIdleCloseMs) continue;
      this.pools.delete(origin);
      void e.pool.close().catch(() => undefined);
    }
  }
}
