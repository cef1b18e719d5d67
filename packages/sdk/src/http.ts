import { ConnectionError, GatewayError, errorFromResponse } from './errors.js';

export interface TransportOptions {
  /** The gateway, e.g. `http://127.0.0.1:8080` (no trailing `/v1`). */
  baseUrl: string;
  /** The API key (sent as `Authorization: Bearer`). Never logged by the SDK. */
  apiKey: string;
  /** Retries of a 429 / 503 answer or a lost connection (default 2; 0 disables). */
  maxRetries?: number;
  /** A `Retry-After` longer than this is not waited for: the error is thrown instead (default 30000 ms). */
  maxRetryDelayMs?: number;
  /** Backoff when the answer names no `Retry-After`: base × 2^attempt, jittered (default 500 ms). */
  retryBaseDelayMs?: number;
  /** A fetch implementation (default: the global `fetch`). */
  fetch?: typeof fetch;
  /** Headers added to every request (e.g. a tracing id). */
  headers?: Record<string, string>;
  /** Called before each retry's pause (to log or count retries); what it returns or throws is ignored. */
  onRetry?: (retry: RetryInfo) => void;
}

/** A retry about to be made, after a pause of `delayMs` (TransportOptions.onRetry). */
export interface RetryInfo {
  method: 'GET' | 'POST';
  path: string;
  /** 1 for the first retry of the request. */
  attempt: number;
  /** The pause before it: the answer's `Retry-After` when it named one, else the jittered backoff. */
  delayMs: number;
  /** What the previous attempt ended with: a typed error answer (429, 503, or 409 on a retried submission) or a ConnectionError. */
  error: GatewayError | ConnectionError;
}

export interface RequestOptions {
  /** Aborts the request (and any retry wait). */
  signal?: AbortSignal;
  /**
   * Submissions only: the `Idempotency-Key` (default: a new random one per call, reused by every retry of that
   * call). `false` sends none.
   */
  idempotencyKey?: string | false;
  /** Extra headers for this request. */
  headers?: Record<string, string>;
}

export interface HttpRequest extends RequestOptions {
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string | undefined>;
  /** JSON body, or a FormData (multipart). */
  body?: unknown;
  /** A submission: gets an Idempotency-Key, so retrying it cannot create a second task. */
  submit?: boolean;
}

/** A timer that an AbortSignal cancels (rejecting with the signal's reason). */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

const RETRY_STATUSES = new Set([429, 503]);

/** The HTTP layer: auth header, JSON, typed errors, bounded retries honouring `Retry-After`. */
export class Transport {
  private readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  readonly maxRetries: number;
  private readonly maxRetryDelayMs: number;
  private readonly retryBaseDelayMs: number;

  constructor(private readonly opts: TransportOptions) {
    if (!opts.baseUrl) throw new TypeError('baseUrl is required');
    if (!opts.apiKey) throw new TypeError('apiKey is required');
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.fetchImpl = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.maxRetries = Math.max(0, Math.min(opts.maxRetries ?? 2, 10));
    this.maxRetryDelayMs = opts.maxRetryDelayMs ?? 30_000;
    this.retryBaseDelayMs = opts.retryBaseDelayMs ?? 500;
  }

  url(path: string, query?: Record<string, string | undefined>): string {
    const u = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) u.searchParams.set(k, v);
    return u.toString();
  }

  /** Sends the request (retrying as configured) and answers the raw Response of the final attempt when it is 2xx. */
  async send(req: HttpRequest): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json', ...this.opts.headers, ...req.headers, authorization: `Bearer ${this.opts.apiKey}` };
    let body: RequestInit['body'];
    if (req.body instanceof FormData) body = req.body;
    else if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers['content-type'] = 'application/json';
    }
    if (req.submit && req.idempotencyKey !== false) headers['idempotency-key'] = req.idempotencyKey ?? globalThis.crypto.randomUUID();
    // a GET and a submission with an Idempotency-Key are safe to repeat; anything else only on 429/503 (never processed)
    const replayable = req.method === 'GET' || Boolean(headers['idempotency-key']);
    const url = this.url(req.path, req.query);

    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await this.fetchImpl(url, { method: req.method, headers, body, signal: req.signal });
      } catch (err) {
        if (req.signal?.aborted) throw req.signal.reason;
        const error = new ConnectionError(`${req.method} ${req.path}: ${(err as Error).message}`, { cause: err });
        if (!replayable || attempt >= this.maxRetries) throw error;
        await this.pause(req, attempt, this.backoff(attempt), error);
        continue;
      }
      if (res.ok) return res;
      const error = errorFromResponse(res.status, await readJson(res), res.headers);
      // 409 on a retried submission: the first attempt is still being processed under the same key; wait for it
      const retryable = RETRY_STATUSES.has(res.status) || (res.status === 409 && attempt > 0 && Boolean(headers['idempotency-key']));
      if (!retryable || attempt >= this.maxRetries) throw error;
      const delay = error.retryAfter !== undefined ? error.retryAfter * 1000 : this.backoff(attempt);
      if (delay > this.maxRetryDelayMs) throw error;
      await this.pause(req, attempt, delay, error);
    }
  }

  private pause(req: HttpRequest, attempt: number, delayMs: number, error: GatewayError | ConnectionError): Promise<void> {
    try {
      this.opts.onRetry?.({ method: req.method, path: req.path, attempt: attempt + 1, delayMs, error });
    } catch {
      // an observer: what it does (or throws) never changes the request
    }
    return sleep(delayMs, req.signal);
  }

  /** send() and parse the JSON answer. */
  async json<T>(req: HttpRequest): Promise<T> {
    const res = await this.send(req);
    const parsed = await readJson(res);
    if (parsed === undefined)
      throw new GatewayError({ status: res.status, type: 'server_error', message: `${req.method} ${req.path}: the answer is not JSON` });
    return parsed as T;
  }

  private backoff(attempt: number): number {
    const base = this.retryBaseDelayMs * 2 ** attempt;
    return Math.min(this.maxRetryDelayMs, base / 2 + Math.random() * (base / 2));
  }
}

async function readJson(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
