/**
 * The SDK's retry rules against a real HTTP server on loopback that answers what the test scripts (503 / 429 with
 * Retry-After, then success): what the gateway does under load, without loading it.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GatewayClient, RateLimitError, ServiceUnavailableError, type RetryInfo } from '../src/index.js';

interface Seen {
  method: string;
  url: string;
  idempotencyKey?: string;
}

describe('sdk transport: retries of 429/503 honouring Retry-After', () => {
  let server: Server;
  let base: string;
  let script: Array<{ status: number; headers?: Record<string, string>; body: unknown }> = [];
  const seen: Seen[] = [];

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      seen.push({ method: req.method!, url: req.url!, idempotencyKey: req.headers['idempotency-key'] as string | undefined });
      req.resume();
      const next = script.shift() ?? { status: 500, body: { error: { code: 500, type: 'server_error', message: 'script ran out' } } };
      res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers });
      res.end(JSON.stringify(next.body));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  beforeEach(() => {
    seen.length = 0;
    script = [];
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const unavailable = (retryAfter: string) => ({
    status: 503,
    headers: { 'retry-after': retryAfter },
    body: { error: { code: 503, type: 'service_unavailable', message: 'busy' } },
  });
  const limited = (retryAfter: string) => ({
    status: 429,
    headers: { 'retry-after': retryAfter },
    body: { error: { code: 429, type: 'rate_limit_error', message: 'slow down' } },
  });
  const ack = { status: 200, body: { code: 200, data: [{ status: 'submitted', task_id: 'task_abc' }] } };

  it('waits the Retry-After of a 503, then resends the submission with the same Idempotency-Key', async () => {
    script = [unavailable('1'), ack];
    const retries: RetryInfo[] = [];
    const gmg = new GatewayClient({ baseUrl: base, apiKey: 'sk-test', onRetry: (r) => retries.push(r) });
    const { taskId } = await gmg.images.generate({ model: 'lumen-2-flex', prompt: 'p' });
    expect(taskId).toBe('task_abc');
    expect(seen).toHaveLength(2);
    // one retry, after the pause the answer named (not the backoff's 250-500 ms)
    expect(retries).toEqual([
      { method: 'POST', path: '/v1/images/generations', attempt: 1, delayMs: 1000, error: expect.any(ServiceUnavailableError) as unknown },
    ]);
    expect(seen[0]!.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[1]!.idempotencyKey).toBe(seen[0]!.idempotencyKey);
  });

  it('an onRetry that throws changes nothing: the request is retried and answered', async () => {
    script = [limited('0'), ack];
    let called = 0;
    const gmg = new GatewayClient({
      baseUrl: base,
      apiKey: 'sk-test',
      onRetry: () => {
        called++;
        throw new Error('a broken logger');
      },
    });
    const { taskId } = await gmg.images.generate({ model: 'lumen-2-flex', prompt: 'p' });
    expect(taskId).toBe('task_abc');
    expect(called).toBe(1);
    expect(seen).toHaveLength(2);
  });

  it('gives up after maxRetries (bounded) with the typed error of the last answer', async () => {
    script = [limited('0'), limited('0'), limited('0'), limited('0'), ack];
    const gmg = new GatewayClient({ baseUrl: base, apiKey: 'sk-test', maxRetries: 2 });
    const err = await gmg.images.generate({ model: 'lumen-2-flex', prompt: 'p' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect(seen).toHaveLength(3);
  });

  it('does not wait a Retry-After longer than maxRetryDelayMs: throws at once', async () => {
    script = [unavailable('120'), ack];
    const retries: RetryInfo[] = [];
    const gmg = new GatewayClient({ baseUrl: base, apiKey: 'sk-test', maxRetryDelayMs: 5000, onRetry: (r) => retries.push(r) });
    const err = await gmg.tasks.get('task_abc').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceUnavailableError);
    expect(err).toMatchObject({ retryAfter: 120 });
    expect(seen).toHaveLength(1);
    expect(retries).toEqual([]); // no pause was begun
  });

  it('never retries a client error, and sends no Idempotency-Key on reads', async () => {
    script = [{ status: 400, body: { error: { code: 400, type: 'invalid_request_error', message: '`prompt` is required' } } }, ack];
    const gmg = new GatewayClient({ baseUrl: base, apiKey: 'sk-test' });
    await expect(gmg.images.generate({ model: 'lumen-2-flex', prompt: '' })).rejects.toMatchObject({ param: 'prompt', status: 400 });
    expect(seen).toHaveLength(1);
    script = [{ status: 200, body: { code: 200, data: { id: 'task_abc', status: 'pending', progress: 0, cost: 0, created: 0 } } }];
    await gmg.tasks.get('task_abc');
    expect(seen[1]).toMatchObject({ method: 'GET', url: '/v1/tasks/task_abc', idempotencyKey: undefined });
  });
});
