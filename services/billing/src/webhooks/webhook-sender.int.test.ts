import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWebhookSender } from './webhook-sender';

/** The delivery agent against a real local receiver: loopback only in local mode, no redirects, size cap. */
describe('webhook sender (SSRF-checked agent)', () => {
  let server: Server;
  let base: string;
  let hits = 0;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hits++;
      if (req.url === '/redirect') {
        res.writeHead(302, { Location: 'http://169.254.169.254/latest/meta-data/' });
        return res.end();
      }
      if (req.url === '/big') return res.end('x'.repeat(10_000));
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const opts = { timeoutMs: 3000, maxResponseBytes: 1024 };

  it('refuses a loopback receiver when local mode is off: no connection is made', async () => {
    const before = hits;
    const send = createWebhookSender({ ...opts, allowPrivate: false });
    const r = await send(`${base}/hook`, '{}', {});
    expect(r).toMatchObject({ statusCode: null, error: 'refused: the callback address is private or reserved' });
    // A name resolving to loopback is refused the same way (checked after DNS, at connect).
    const byName = await send(`http://localhost:${new URL(base).port}/hook`, '{}', {});
    expect(byName.error).toBe('refused: the callback address is private or reserved');
    expect(hits).toBe(before);
  });

  it('delivers to a loopback receiver in local mode', async () => {
    const send = createWebhookSender({ ...opts, allowPrivate: true });
    expect(await send(`${base}/hook`, '{"a":1}', { 'X-Test': '1' })).toMatchObject({ statusCode: 200, error: null });
  });

  it('does not follow a redirect (the 3xx is the answer) and caps the response size', async () => {
    const send = createWebhookSender({ ...opts, allowPrivate: true });
    expect(await send(`${base}/redirect`, '{}', {})).toMatchObject({ statusCode: 302, error: null });
    expect(await send(`${base}/big`, '{}', {})).toMatchObject({ statusCode: null, error: 'response larger than 1024 bytes' });
  });
});
