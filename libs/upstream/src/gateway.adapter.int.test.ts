import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import type { NormalizedRequest } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import { createGatewayAdapter } from './gateway.adapter';
import type { ChannelTarget } from './adapter';

const API_KEY = 'sk-upstream-secret-123456';

interface Seen {
  path: string;
  auth?: string;
  idem?: string;
  body: unknown;
}

/** A scripted upstream: each test sets `reply` for the next requests. */
function fakeUpstream() {
  const seen: Seen[] = [];
  let reply: (req: express.Request, res: express.Response) => void = (_req, res) => res.status(500).end();
  const app = express();
  app.use(express.json());
  app.all('/{*rest}', (req, res) => {
    seen.push({ path: req.path, auth: req.header('authorization'), idem: req.header('idempotency-key'), body: req.body });
    reply(req, res);
  });
  return { app, seen, setReply: (r: typeof reply) => (reply = r) };
}

const request = (over: Partial<NormalizedRequest> = {}): NormalizedRequest => ({
  model: 'lumen-2-pro',
  requestedModel: 'lumen-2-pro',
  pool: 'image',
  upstreamBody: { model: 'lumen-2-pro', prompt: 'a cat', resolution: '1MP', size: '1:1' },
  derived: {},
  billing: [],
  expected: { kind: 'images', count: 1, width: 1024, height: 1024, format: 'jpeg' },
  ...over,
});

describe('gateway adapter against a local HTTP upstream', () => {
  const up = fakeUpstream();
  let server: Server;
  let ch: ChannelTarget;
  const adapter = createGatewayAdapter({ timeoutMs: 500, maxResponseBytes: 10_000, endpointFor: () => '/v1/images/generations' });

  beforeAll(async () => {
    server = await new Promise<Server>((resolve) => {
      const s = up.app.listen(0, '127.0.0.1', () => resolve(s));
    });
    const port = (server.address() as AddressInfo).port;
    ch = { id: 'ch1', name: 'local', protocol: 'gateway', baseUrl: `http://127.0.0.1:${port}/`, apiKey: API_KEY, modelMap: {}, settings: {} };
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => (up.seen.length = 0));

  const expectUpstreamError = async (p: Promise<unknown>, retryable: boolean, kind: string): Promise<UpstreamError> => {
    const e = await p.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(UpstreamError);
    const ue = e as UpstreamError;
    expect({ retryable: ue.retryable, kind: ue.kind }).toEqual({ retryable, kind });
    expect(ue.message).not.toContain(API_KEY);
    return ue;
  };

  it('submits the body with bearer key and the task id as idempotency key, and reads ack shape A', async () => {
    up.setReply((_req, res) => res.json({ code: 200, data: [{ status: 'submitted', task_id: 'task_up1' }] }));
    const got = await adapter.submit(ch, request(), { taskId: 'task_ours1' });
    expect(got).toEqual({ upstreamTaskId: 'task_up1' });
    expect(up.seen).toEqual([{ path: '/v1/images/generations', auth: `Bearer ${API_KEY}`, idem: 'task_ours1', body: request().upstreamBody }]);
  });

  it('reads ack shape B answered with HTTP 202', async () => {
    up.setReply((_req, res) => res.status(202).json({ code: 202, request_id: 'r1', data: { id: 'task_b', object: 'generation.task', status: 'pending' } }));
    await expect(adapter.submit(ch, request(), { taskId: 't' })).resolves.toEqual({ upstreamTaskId: 'task_b' });
  });

  it('turns a 503 into a retryable error', async () => {
    up.setReply((_req, res) => res.status(503).json({ error: { code: 503, message: 'busy', type: 'service_unavailable' } }));
    const e = await expectUpstreamError(adapter.submit(ch, request(), { taskId: 't' }), true, 'server');
    expect(e.status).toBe(503);
    expect(e.message).toContain('busy');
  });

  it('turns a 429 into a retryable quota error', async () => {
    up.setReply((_req, res) => res.status(429).json({ error: { code: 429, message: 'slow down', type: 'rate_limit_error' } }));
    await expectUpstreamError(adapter.submit(ch, request(), { taskId: 't' }), true, 'quota');
  });

  it('turns a 400 into a final error carrying the upstream message', async () => {
    up.setReply((_req, res) => res.status(400).json({ error: { code: 400, message: 'size not allowed', type: 'invalid_request_error' } }));
    const e = await expectUpstreamError(adapter.submit(ch, request(), { taskId: 't' }), false, 'bad_request');
    expect(e.message).toContain('size not allowed');
  });

  it('never repeats the api key even when the upstream echoes it back', async () => {
    up.setReply((req, res) => res.status(401).json({ error: { code: 401, message: `bad key ${req.header('authorization')}`, type: 'authentication_error' } }));
    const e = await expectUpstreamError(adapter.submit(ch, request(), { taskId: 't' }), true, 'channel');
    expect(e.message).toContain('[redacted]');
  });

  it('times out a silent upstream as a retryable timeout', async () => {
    up.setReply(() => undefined);
    await expectUpstreamError(adapter.submit(ch, request(), { taskId: 't' }), true, 'timeout');
  });

  it('refuses a response larger than the cap', async () => {
    up.setReply((_req, res) => res.json({ code: 200, data: [{ status: 'submitted', task_id: 'x'.repeat(20_000) }] }));
    await expectUpstreamError(adapter.submit(ch, request(), { taskId: 't' }), true, 'server');
  });

  it('refuses a streamed (chunked, no Content-Length) response once it passes the cap, and keeps working after', async () => {
    up.setReply((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.write(`{"code":200,"data":[{"status":"submitted","task_id":"${'x'.repeat(6_000)}`);
      res.end(`${'y'.repeat(6_000)}"}]}`);
    });
    const e = await expectUpstreamError(adapter.submit(ch, request(), { taskId: 't' }), true, 'server');
    expect(e.message).toMatch(/larger than the size cap/);
    up.setReply((_req, res) => res.json({ code: 200, data: [{ status: 'submitted', task_id: 'task_after' }] }));
    await expect(adapter.submit(ch, request(), { taskId: 't' })).resolves.toEqual({ upstreamTaskId: 'task_after' });
  });

  it('treats a 2xx without a task id as retryable', async () => {
    up.setReply((_req, res) => res.json({ ok: true }));
    await expectUpstreamError(adapter.submit(ch, request(), { taskId: 't' }), true, 'server');
  });

  it('reports connection refused as a retryable network error', async () => {
    const dead = await new Promise<Server>((resolve) => {
      const s = express().listen(0, '127.0.0.1', () => resolve(s));
    });
    const port = (dead.address() as AddressInfo).port;
    await new Promise((r) => dead.close(r));
    await expectUpstreamError(adapter.submit({ ...ch, baseUrl: `http://127.0.0.1:${port}` }, request(), { taskId: 't' }), true, 'network');
  });

  it('polls GET /v1/tasks/<id> and maps a completed task', async () => {
    up.setReply((_req, res) =>
      res.json({ code: 200, data: { id: 'task_up1', status: 'completed', progress: 100, result: { images: [{ url: 'http://x/1.jpg' }] } } }),
    );
    const p = await adapter.poll(ch, 'task_up1');
    expect(p).toEqual({ status: 'completed', progress: 100, result: { images: [{ url: 'http://x/1.jpg' }] } });
    expect(up.seen[0]).toMatchObject({ path: '/v1/tasks/task_up1', auth: `Bearer ${API_KEY}` });
  });

  it('polls a failed moderation task as moderation', async () => {
    up.setReply((_req, res) =>
      res.json({
        code: 200,
        data: { id: 't', status: 'failed', progress: 0, error: { code: 'task_failed', message: 'Banned prompt detected', type: 'moderation' } },
      }),
    );
    await expect(adapter.poll(ch, 't')).resolves.toMatchObject({ status: 'failed', error: { moderation: true } });
  });

  it('treats a 404 on poll as final', async () => {
    up.setReply((_req, res) => res.status(404).json({ error: { code: 404, message: 'task not found', type: 'not_found_error' } }));
    await expectUpstreamError(adapter.poll(ch, 'task_gone'), false, 'not_found');
  });

  it('sends no Authorization header for a channel without a key', async () => {
    up.setReply((_req, res) => res.json({ code: 200, data: { id: 't', status: 'pending', progress: 0 } }));
    await adapter.poll({ ...ch, apiKey: '' }, 't');
    expect(up.seen[0].auth).toBeUndefined();
  });
});
