import http from 'node:http';
import { waitFor } from '@gmg/testing';
import { chargeOf, nextCall, startEdgeHarness, type EdgeHarness } from '../chat/chat.test-kit';

/**
 * Backpressure: a client that stops reading makes the gateway stop reading the upstream, so the upstream stops
 * writing long before its answer is out and the gateway never holds the whole answer in memory. When the client
 * reads again, everything arrives, in order, and the call is charged by the final usage.
 */
const TOTAL_BYTES = 48 * 1024 * 1024;
const DELTA = 'x'.repeat(4096);
const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const DELTA_EVENT = ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: DELTA } });
const EVENTS = Math.ceil(TOTAL_BYTES / DELTA_EVENT.length);

let h: EdgeHarness;
let upstream: http.Server;
let written = 0;
let upstreamDone = false;
let seenHeaders: http.IncomingHttpHeaders = {};

/** A fast upstream that honours its own socket's backpressure and counts what it managed to write. */
function startUpstream(): Promise<string> {
  upstream = http.createServer((req, res) => {
    seenHeaders = req.headers;
    req.resume();
    req.on('end', () => void stream());
    const stream = async (): Promise<void> => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const write = async (s: string) => {
        written += s.length;
        if (!res.write(s)) await new Promise((r) => res.once('drain', r));
      };
      await write(
        ev('message_start', { message: { id: 'msg_bp', type: 'message', role: 'assistant', content: [], usage: { input_tokens: 10, output_tokens: 1 } } }),
      );
      await write(ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
      for (let i = 0; i < EVENTS && !res.destroyed; i++) await write(DELTA_EVENT);
      await write(ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: EVENTS * 1024 } }));
      const stop = ev('message_stop', {});
      written += stop.length;
      res.end(stop);
      upstreamDone = true;
    };
  });
  return new Promise((resolve) => upstream.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(upstream.address() as { port: number }).port}`)));
}

beforeAll(async () => {
  h = await startEdgeHarness({ env: { MESSAGES_CHANNEL_CACHE_TTL_MS: '0' } });
  // through the management API: a messages channel whose upstream reads the version from `msgproto-version`
  const created = await fetch(`${h.baseUrl}/api/channels`, {
    method: 'POST',
    headers: { authorization: `Bearer ${h.config.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'fast',
      protocol: 'messages',
      base_url: await startUpstream(),
      api_key: 'upstream-key',
      models: ['lumen-chat-1'],
      version_header: 'msgproto-version',
    }),
  });
  expect(created.status).toBe(201);
  expect(((await created.json()) as { data: Record<string, unknown> }).data).toMatchObject({ protocol: 'messages', version_header: 'msgproto-version' });
}, 60_000);
afterAll(async () => {
  await h?.background.creditLeases.close();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
  await h?.close();
});

it('a client that stops reading stalls the upstream far before the end; reading again gets the whole stream', async () => {
  const { key, accountId } = await h.newCustomer({ balance: 500 });
  const body = JSON.stringify({ model: 'lumen-chat-1', max_tokens: EVENTS * 1024, stream: true, messages: [{ role: 'user', content: 'a lot' }] });
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const r = http.request(
      `${h.baseUrl}/v1/messages`,
      { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' } },
      resolve,
    );
    r.on('error', reject);
    r.end(body);
  });
  expect(res.statusCode).toBe(200);
  // the channel's key and version header, not the client's
  expect(seenHeaders).toMatchObject({ 'x-api-key': 'upstream-key', 'msgproto-version': '2023-06-01' });
  expect(seenHeaders['anthropic-version']).toBeUndefined();
  expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
  expect(res.headers['content-encoding']).toBeUndefined();
  res.pause();

  // the upstream's count stops moving while the client does not read
  let last = -1;
  let still = 0;
  await waitFor(
    () => {
      still = written === last ? still + 1 : 0;
      last = written;
      return still >= 5;
    },
    { timeoutMs: 20_000, intervalMs: 100, what: 'the upstream stalled by backpressure' },
  );
  expect(upstreamDone).toBe(false);
  expect(written).toBeLessThan(TOTAL_BYTES / 2);

  let received = 0;
  let tail = '';
  res.on('data', (c: Buffer) => {
    received += c.length;
    tail = (tail + c.toString('latin1')).slice(-200);
  });
  res.resume();
  await new Promise((r) => res.on('end', r));
  expect(upstreamDone).toBe(true);
  expect(received).toBe(written);
  expect(tail).toContain('event: message_stop');
  const ledger = await chargeOf(h, (await nextCall(h, accountId, 0)).id as string);
  expect(ledger.capture).toBeGreaterThan(0n);
}, 120_000);
