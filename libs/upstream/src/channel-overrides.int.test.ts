import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { ProxyAgent, request as undiciRequest } from 'undici';
import { UpstreamError } from '@gmg/errors';
import type { NormalizedRequest } from '@gmg/contracts';
import { startForwardProxy, type ForwardProxy } from '@gmg/testing';
import type { ChannelSettings, ChannelTarget } from './adapter';
import { channelDispatcher, closeChannelDispatchers, redactProxyUrl, withFixedBody } from './channel-overrides';
import { createGatewayAdapter } from './gateway.adapter';
import { createDownloader } from './results/media-download';

interface Seen {
  method: string;
  path: string;
  viaProxy: boolean;
  org?: string;
  body: unknown;
}

/** A vendor on 127.0.0.1: answers `?status=` (or the path's last word) as told; `/slow` answers only when released. */
function vendor(proxy: () => ForwardProxy) {
  const seen: Seen[] = [];
  const held: express.Response[] = [];
  const app = express();
  app.use(express.json());
  app.all('/{*rest}', (req, res) => {
    seen.push({ method: req.method, path: req.path, viaProxy: proxy().carried(req.socket.remotePort), org: req.header('x-org'), body: req.body });
    if (req.path.includes('slow')) return void held.push(res);
    const status = /\/status-(\d{3})/.exec(req.path)?.[1];
    if (status) return void res.status(Number(status)).json({ error: { type: 'upstream_error', message: `answered ${status}` } });
    if (req.path.startsWith('/files/')) return void res.type('image/png').send(Buffer.from('png-bytes'));
    if (req.method === 'GET') return void res.json({ code: 200, data: { id: 't1', status: 'processing', progress: 40 } });
    res.json({ code: 200, data: [{ status: 'submitted', task_id: 't1' }] });
  });
  return { app, seen, held };
}

const request = (): NormalizedRequest => ({
  model: 'lumen-2-pro',
  requestedModel: 'lumen-2-pro',
  pool: 'image',
  upstreamBody: { model: 'lumen-2-pro', prompt: 'a cat' },
  derived: {},
  billing: [],
  expected: { kind: 'images', count: 1, width: 1024, height: 1024, format: 'jpeg' },
});

const failure = async (p: Promise<unknown>): Promise<UpstreamError> => {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(UpstreamError);
  return e as UpstreamError;
};

describe('per-channel overrides on the task protocols, against a local vendor and a local forward proxy', () => {
  let proxy: ForwardProxy;
  let authProxy: ForwardProxy;
  const up = vendor(() => proxy);
  let server: Server;
  let base: string;
  const adapter = createGatewayAdapter({ timeoutMs: 5_000, endpointFor: () => '/v1/images/generations' });
  const channel = (name: string, settings: ChannelSettings, path = ''): ChannelTarget => ({
    id: name,
    name,
    protocol: 'gateway',
    baseUrl: `${base}${path}`,
    apiKey: 'sk-channel-secret-1234',
    modelMap: {},
    settings,
  });

  beforeAll(async () => {
    proxy = await startForwardProxy();
    authProxy = await startForwardProxy({ auth: 'gmg:pr0xy-s3cret' });
    server = await new Promise<Server>((resolve) => {
      const s = up.app.listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const res of up.held) res.end();
    await closeChannelDispatchers();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await proxy.close();
    await authProxy.close();
  });
  beforeEach(() => (up.seen.length = 0));

  it('sends submit, poll and cancel of the channel with a proxy through it, with its headers and body; the other channel goes direct', async () => {
    const proxied = channel('proxied', { proxy: proxy.url, headers: { 'x-org': 'org-1' }, body: { seed: 7, prompt: 'never wins' } });
    const direct = channel('direct', {});
    const req = request();
    await adapter.submit(proxied, req, { taskId: 'task-a' });
    await adapter.poll(proxied, 't1');
    await adapter.cancel!(proxied, 't1');
    const tunnels = proxy.count();
    expect(tunnels).toBeGreaterThan(0);
    await adapter.submit(direct, req, { taskId: 'task-b' });
    await adapter.poll(direct, 't1');

    expect(up.seen.map((s) => [s.method, s.viaProxy, s.org])).toEqual([
      ['POST', true, 'org-1'],
      ['GET', true, 'org-1'],
      ['POST', true, 'org-1'],
      ['POST', false, undefined],
      ['GET', false, undefined],
    ]);
    // fixed body parameters go under the request's own: the prompt is the request's
    expect(up.seen[0]!.body).toEqual({ seed: 7, prompt: 'a cat', model: 'lumen-2-pro' });
    expect(up.seen[3]!.body).toEqual({ prompt: 'a cat', model: 'lumen-2-pro' });
    expect(proxy.count()).toBe(tunnels);
  });

  it('downloads a result of a proxied channel through the proxy', async () => {
    const dl = createDownloader({ publicHosts: { checkUrl: () => Promise.resolve({ kind: 'public' as const }) }, timeoutMs: 5_000, userAgent: 't' });
    try {
      const via = channelDispatcher({ proxy: proxy.url });
      const got = await dl.open(`${base}/files/a.png`, {}, new URL(base).host, AbortSignal.timeout(5_000), via);
      expect(Buffer.from(await got.body.arrayBuffer()).toString()).toBe('png-bytes');
      const plain = await dl.open(`${base}/files/b.png`, {}, new URL(base).host, AbortSignal.timeout(5_000));
      await plain.body.dump();
      expect(up.seen.map((s) => [s.path, s.viaProxy])).toEqual([
        ['/files/a.png', true],
        ['/files/b.png', false],
      ]);
    } finally {
      await dl.close();
    }
  });

  it("authenticates with the proxy URL's credentials; wrong ones fail over as a network failure that never names them", async () => {
    const good = channel('auth-ok', { proxy: authProxy.url });
    await expect(adapter.poll(good, 't1')).resolves.toMatchObject({ status: 'processing' });
    expect(authProxy.count()).toBeGreaterThan(0);
    const bad = channel('auth-bad', { proxy: authProxy.url.replace('pr0xy-s3cret', 'wr0ng-pass') });
    const e = await failure(adapter.poll(bad, 't1'));
    expect({ retryable: e.retryable, kind: e.kind }).toEqual({ retryable: true, kind: 'network' });
    expect(e.message).not.toMatch(/s3cret|wr0ng/);
    expect(authProxy.refused).toBeGreaterThan(0);
    expect(redactProxyUrl(authProxy.url)).toBe(`http://gmg:***@127.0.0.1:${authProxy.port}/`);
  });

  it('the test proxy forwards an absolute-form request too (a client that does not tunnel plain http)', async () => {
    const before = proxy.requests.length;
    const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false });
    try {
      const res = await undiciRequest(`${base}/files/plain.png`, { dispatcher: agent });
      expect(await res.body.text()).toBe('png-bytes');
    } finally {
      await agent.close();
    }
    expect(proxy.requests.slice(before)).toEqual([`${base}/files/plain.png`]);
    expect(up.seen.map((s) => s.viaProxy)).toEqual([true]);
  });

  it('keeps one dispatcher per distinct proxy and connect timeout', () => {
    const a = channelDispatcher({ proxy: proxy.url });
    expect(channelDispatcher({ proxy: proxy.url, timeouts: { poll_ms: 1000 } })).toBe(a);
    expect(channelDispatcher({ proxy: authProxy.url })).not.toBe(a);
    expect(channelDispatcher({ proxy: proxy.url, timeouts: { connect_ms: 1000 } })).not.toBe(a);
    expect(channelDispatcher({})).toBeUndefined();
  });

  it("bounds a submit by the channel's request_ms and a poll by its poll_ms (a timeout, retryable), not the process default", async () => {
    const slowSubmit = channel('slow-submit', { timeouts: { request_ms: 200 } }, '/slow');
    const t0 = Date.now();
    const e = await failure(adapter.submit(slowSubmit, request(), { taskId: 'task-slow' }));
    expect({ retryable: e.retryable, kind: e.kind }).toEqual({ retryable: true, kind: 'timeout' });
    // the poll's bound is wider: it covers the tunnel through the proxy too, which a loaded CI host has taken
    // more than 200 ms to open (the vendor never saw the poll); 1 s still proves poll_ms, not the adapter's 5 s
    const slowPoll = channel('slow-poll', { proxy: proxy.url, timeouts: { poll_ms: 1_000 } }, '/slow');
    const p = await failure(adapter.poll(slowPoll, 't1'));
    expect(p.kind).toBe('timeout');
    // both well under the adapter's 5 s
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect(up.seen.map((s) => s.viaProxy)).toEqual([false, true]);
  });

  it('maps a status to retry, failover or fail over the built-in reading, and leaves the rest as it was', async () => {
    const mapped = (status: number, map: Record<string, 'retry' | 'failover' | 'fail'>) =>
      failure(adapter.poll(channel(`map-${status}`, { status_map: map }, `/status-${status}`), 't1'));
    // a client error mapped to failover: retryable, counts against the channel, leaves it at once (Retry-After 0)
    const failover = await mapped(400, { '400': 'failover' });
    expect([failover.retryable, failover.kind, failover.retryAfterMs, failover.status]).toEqual([true, 'server', 0, 400]);
    // a server class mapped to fail: final, the client's kind (refunded, not blamed on the channel)
    const fail = await mapped(503, { '5xx': 'fail' });
    expect([fail.retryable, fail.kind]).toEqual([false, 'bad_request']);
    // retry keeps the built-in retryable kind (a rate limit stays a rate limit for the key's health)
    const retry = await mapped(429, { '4xx': 'fail', '429': 'retry' });
    expect([retry.retryable, retry.kind, retry.retryAfterMs]).toEqual([true, 'quota', undefined]);
    // the exact code wins over its class; an unmapped status keeps the built-in reading
    const unmapped = await mapped(404, { '5xx': 'retry' });
    expect([unmapped.retryable, unmapped.kind]).toEqual([false, 'not_found']);
  });
});

describe('withFixedBody (chat)', () => {
  const body = (o: unknown) => Buffer.from(JSON.stringify(o));
  it("adds the channel's parameters under the request's own and never the gateway's fields", () => {
    const out = withFixedBody(body({ model: 'm', max_tokens: 10, temperature: 0.2 }), {
      temperature: 1,
      top_k: 5,
      model: 'other',
      stream: true,
      stream_options: { include_usage: false },
      max_tokens: 99999,
    });
    expect(JSON.parse(out.toString())).toEqual({ model: 'm', max_tokens: 10, temperature: 0.2, top_k: 5 });
  });
  it('keeps the same bytes when nothing is added or the body is not an object', () => {
    const b = body({ model: 'm', temperature: 0.2 });
    expect(withFixedBody(b, { temperature: 1 })).toBe(b);
    const notJson = Buffer.from('not json');
    expect(withFixedBody(notJson, { top_k: 1 })).toBe(notJson);
  });
});
