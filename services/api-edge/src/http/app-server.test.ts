import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { appServer } from './app-server';

/** The server main.ts runs: requests and responses born with the app's prototypes, the app's behaviour unchanged. */
describe('appServer', () => {
  const app = express();
  app.use(express.json());
  app.get('/proto', (req, res) => {
    res.json({ reqIsApps: Object.getPrototypeOf(req) === app.request, resIsApps: Object.getPrototypeOf(res) === app.response });
  });
  app.post('/echo', (req, res) => {
    res
      .status(201)
      .set('X-Echo', String(req.get('x-in')))
      .json({ body: req.body as unknown, query: req.query, ip: typeof req.ip });
  });
  app.get('/stream', (_req, res) => {
    res.type('text/plain');
    res.write('a');
    setImmediate(() => res.end('b'));
  });
  app.get('/boom', () => {
    throw new Error('boom');
  });
  app.use((err: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(500).json({ error: err.message });
  });

  const server = appServer(app);
  /** Whether each request had the app's prototype before Express touched it (a listener that runs before the app). */
  const bornWith: boolean[] = [];
  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    bornWith.push(Object.getPrototypeOf(req) === app.request && Object.getPrototypeOf(res) === app.response);
  });
  let base = '';
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('makes every request and response with the app prototypes, before Express runs', async () => {
    bornWith.length = 0;
    const r = await fetch(`${base}/proto`);
    expect(await r.json()).toEqual({ reqIsApps: true, resIsApps: true });
    expect(bornWith).toEqual([true]);
    // and they are still Node's own objects underneath
    expect(Object.prototype.isPrototypeOf.call(http.IncomingMessage.prototype, app.request)).toBe(true);
    expect(Object.prototype.isPrototypeOf.call(http.ServerResponse.prototype, app.response)).toBe(true);
  });

  it('answers as Express does: JSON bodies, status, headers, query, streamed bodies, errors, keep-alive', async () => {
    const r = await fetch(`${base}/echo?x=1`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-in': 'hi' }, body: '{"a":[1,2]}' });
    expect(r.status).toBe(201);
    expect(r.headers.get('x-echo')).toBe('hi');
    expect(await r.json()).toEqual({ body: { a: [1, 2] }, query: { x: '1' }, ip: 'string' });
    const s = await fetch(`${base}/stream`);
    expect(await s.text()).toBe('ab');
    const b = await fetch(`${base}/boom`);
    expect(b.status).toBe(500);
    expect(await b.json()).toEqual({ error: 'boom' });
    const n = await fetch(`${base}/nowhere`);
    expect(n.status).toBe(404);
    // several requests on one kept-alive connection
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    for (let i = 0; i < 3; i++) {
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.get(`${base}/proto`, { agent }, (res) => {
          sockets.add(req.socket);
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
      });
      expect(status).toBe(200);
    }
    expect(sockets.size).toBe(1);
    agent.destroy();
  });
});

describe('appServer timeouts', () => {
  it('applies REQUEST_TIMEOUT_MS / HEADERS_TIMEOUT_MS / KEEP_ALIVE_TIMEOUT_MS to the server, else node keeps its defaults', () => {
    const app = express();
    const set = appServer(app, { requestTimeoutMs: 45_000, headersTimeoutMs: 7_000, keepAliveTimeoutMs: 65_000 });
    const unset = appServer(app);
    expect({ request: set.requestTimeout, headers: set.headersTimeout, keepAlive: set.keepAliveTimeout }).toEqual({
      request: 45_000,
      headers: 7_000,
      keepAlive: 65_000,
    });
    expect(unset.requestTimeout).toBe(http.createServer().requestTimeout);
  });
});
