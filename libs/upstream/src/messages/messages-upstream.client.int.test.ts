import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';
import { MessagesUpstreamClient } from './messages-upstream.client';

/** A local upstream: answers at once, or holds a streamed answer open until `release()`; tracks its open sockets. */
async function upstream() {
  const sockets = new Set<Socket>();
  let release: () => void = () => undefined;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url?.includes('held')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: ping\ndata: {}\n\n');
        release = () => res.end('event: message_stop\ndata: {}\n\n');
      } else res.end('{"ok":true}');
    });
  });
  server.keepAliveTimeout = 120_000; // only the client may close a connection here
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    sockets,
    release: () => release(),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const target = (baseUrl: string) => ({ baseUrl, apiKey: 'k', versionHeader: 'msgproto-version' });
const call = (baseUrl: string, path = '/v1/messages') => ({
  target: target(baseUrl),
  path,
  version: '2023-06-01',
  body: Buffer.from('{}'),
  headers: {},
  signal: new AbortController().signal,
});

/** Waits (bounded) until `cond` holds, checking on each event-loop turn of a 10 ms tick. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

describe('MessagesUpstreamClient pools', () => {
  it("closes the pool of an origin unused past poolIdleCloseMs (a removed channel's connections go), never one still streaming", async () => {
    const a = await upstream();
    const b = await upstream();
    const c = await upstream();
    let now = 1_000_000;
    const client = new MessagesUpstreamClient({ poolIdleCloseMs: 1_000, keepAliveTimeoutMs: 120_000, now: () => now });
    try {
      // a: one call, its keep-alive connection stays open; c: a stream held open
      const ra = await client.send(call(a.url));
      await ra.body.text();
      expect(a.sockets.size).toBe(1);
      const rc = await client.send(call(c.url, '/v1/messages?held'));
      const streamed = rc.body.text();
      expect(client.origins().sort()).toEqual([a.url, c.url].sort());

      // past the bound, the next use of any pool sweeps: a's pool closes (its socket with it)
      now += 2_000;
      const rb = await client.send(call(b.url));
      await rb.body.text();
      expect(client.origins()).toEqual([b.url]);
      await until(() => a.sockets.size === 0, "a's connection to close");

      // c's pool was closed too, but Pool.close lets the running stream finish whole
      expect(c.sockets.size).toBe(1);
      c.release();
      await expect(streamed).resolves.toContain('message_stop');
      await until(() => c.sockets.size === 0, "c's connection to close after its stream");

      // a pool used within the bound is kept
      now += 500;
      await (await client.send(call(b.url))).body.text();
      expect(client.origins()).toEqual([b.url]);
      expect(b.sockets.size).toBe(1);
    } finally {
      await client.close();
      await Promise.all([a.close(), b.close(), c.close()]);
    }
  });
});

describe('MessagesUpstreamClient credentials by protocol', () => {
  it('messages: x-api-key and the version header at /v1/messages; openai: Bearer (or api-key) at /v1/chat/completions, no version', async () => {
    const seen: Array<{ url?: string; headers: http.IncomingHttpHeaders }> = [];
    const server = http.createServer((req, res) => {
      seen.push({ url: req.url, headers: req.headers });
      req.resume();
      req.on('end', () => res.end('{}'));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/root`;
    const client = new MessagesUpstreamClient();
    const send = async (t: Partial<Parameters<MessagesUpstreamClient['send']>[0]['target']>) => {
      const res = await client.send({ ...call(base), path: undefined, target: { ...target(base), apiKey: 'sk-1', ...t } });
      await res.body.text();
    };
    try {
      await send({});
      await send({ protocol: 'openai' });
      await send({ protocol: 'openai', authHeader: 'api-key' });
      expect(seen.map((s) => s.url)).toEqual(['/root/v1/messages', '/root/v1/chat/completions', '/root/v1/chat/completions']);
      expect(seen[0].headers).toMatchObject({ 'x-api-key': 'sk-1', 'msgproto-version': '2023-06-01' });
      expect(seen[0].headers.authorization).toBeUndefined();
      expect(seen[1].headers).toMatchObject({ authorization: 'Bearer sk-1' });
      expect(seen[1].headers['x-api-key']).toBeUndefined();
      expect(seen[1].headers['msgproto-version']).toBeUndefined();
      expect(seen[2].headers).toMatchObject({ 'api-key': 'sk-1' });
      expect(seen[2].headers.authorization).toBeUndefined();
    } finally {
      await client.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
