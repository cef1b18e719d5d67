import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import express from 'express';
import { ChannelRepository } from '@gmg/db';
import { startForwardProxy, type ForwardProxy } from '@gmg/testing';
import { closeChannelDispatchers } from '@gmg/upstream';
import { sdkFor, startEdgeHarness, type EdgeHarness } from '../chat/chat.test-kit';

/**
 * Per-channel overrides on chat calls (docs/upstreams.md, "Per-channel overrides"): a channel's extra headers, fixed
 * body parameters and proxy reach its vendor and only its vendor; its status_map moves a call on (`failover`) or
 * ends it (`fail`); its request_ms bounds the wait for the answer's headers. The vendors are one local server,
 * each channel under its own path, answering as the path says.
 */
interface Seen {
  channel: string;
  viaProxy: boolean;
  org?: string;
  auth?: string;
  body: Record<string, unknown>;
}

let h: EdgeHarness;
let proxy: ForwardProxy;
let vendor: Server;
let client: Anthropic;
const seen: Seen[] = [];
const held: express.Response[] = [];

function startVendor(): Promise<Server> {
  const app = express();
  app.use(express.json());
  app.post('/:channel/v1/messages', (req, res) => {
    const channel = String(req.params.channel);
    seen.push({
      channel,
      viaProxy: proxy.carried(req.socket.remotePort),
      org: req.header('x-org'),
      auth: req.header('x-api-key'),
      body: req.body as Record<string, unknown>,
    });
    if (channel.startsWith('hang')) return void held.push(res);
    const status = /^status-(\d{3})/.exec(channel)?.[1];
    if (status) return void res.status(Number(status)).json({ type: 'error', error: { type: 'invalid_request_error', message: `vendor said ${status}` } });
    res.json({
      id: `msg_${seen.length}`,
      type: 'message',
      role: 'assistant',
      model: (req.body as { model: string }).model,
      content: [{ type: 'text', text: `from ${channel}` }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 3, output_tokens: 2 },
    });
  });
  return new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
}

const ask = (model: string) => client.messages.create({ model, max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] });

beforeAll(async () => {
  [h, proxy, vendor] = await Promise.all([startEdgeHarness({ env: { MESSAGES_CHANNEL_CACHE_TTL_MS: '0' } }), startForwardProxy(), startVendor()]);
  const base = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
  const channels = new ChannelRepository(h.db.dataSource);
  const add = (name: string, models: string[], priority: number, settings: Record<string, unknown> = {}) =>
    channels.create({
      name,
      protocol: 'messages',
      baseUrl: `${base}/${name}`,
      apiKey: 'vendor-key-0123456789',
      models,
      priority,
      groups: ['default'],
      settings,
    });
  // lumen-chat-1: one channel behind the proxy with its own header and body parameters
  await add('proxied', ['lumen-chat-1'], 0, {
    proxy: proxy.url,
    headers: { 'x-org': 'org-7', 'x-api-key': 'never-wins' },
    body: { temperature: 0.3, max_tokens: 9999 },
  });
  // lumen-chat-1-mini: a 400 mapped to failover, then a hung channel bounded by request_ms, then a plain one
  await add('status-400-mapped', ['lumen-chat-1-mini'], 30, { status_map: { '400': 'failover' } });
  await add('hang-bounded', ['lumen-chat-1-mini'], 20, { timeouts: { request_ms: 300 } });
  await add('plain', ['lumen-chat-1-mini'], 0);
  // lumen-omni-1: a 503 mapped to fail ends the call there; the channel behind it is never asked
  await add('status-503-final', ['lumen-omni-1'], 10, { status_map: { '5xx': 'fail' } });
  await add('never-asked', ['lumen-omni-1'], 0);
  const { key } = await h.newCustomer({ balance: 50 });
  client = sdkFor(h, key);
}, 60_000);

afterAll(async () => {
  for (const res of held) res.end();
  await h?.background.creditLeases.close();
  await h?.close();
  await closeChannelDispatchers();
  vendor?.closeAllConnections();
  await new Promise((r) => vendor?.close(r));
  await proxy?.close();
});
beforeEach(() => (seen.length = 0));

it("sends a channel's headers and fixed body parameters through its proxy; the call's own fields and auth win; other channels go direct", async () => {
  const msg = await ask('lumen-chat-1');
  expect(msg.content).toEqual([{ type: 'text', text: 'from proxied' }]);
  expect(seen).toEqual([
    {
      channel: 'proxied',
      viaProxy: true,
      org: 'org-7',
      auth: 'vendor-key-0123456789',
      body: { model: 'lumen-chat-1', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }], temperature: 0.3 },
    },
  ]);
  const tunnels = proxy.count();
  expect(tunnels).toBeGreaterThan(0);
  await ask('lumen-omni-1').catch(() => undefined);
  expect(seen.slice(1).map((s) => [s.channel, s.viaProxy, s.org])).toEqual([['status-503-final', false, undefined]]);
  expect(proxy.count()).toBe(tunnels);
});

it('fails over on a status the channel maps to failover, and past a channel silent beyond its request_ms, to an answer', async () => {
  const t0 = Date.now();
  const msg = await ask('lumen-chat-1-mini');
  expect(msg.content).toEqual([{ type: 'text', text: 'from plain' }]);
  expect(seen.map((s) => s.channel)).toEqual(['status-400-mapped', 'hang-bounded', 'plain']);
  // the hung channel cost its 300 ms bound, not the process's 15 s
  expect(Date.now() - t0).toBeLessThan(5_000);
});

it('ends the call on a status the channel maps to fail: the answer goes back as sent, the next channel is not asked', async () => {
  const err = await ask('lumen-omni-1').catch((e: unknown) => e);
  expect(err).toBeInstanceOf(Anthropic.APIError);
  expect((err as { status: number }).status).toBe(503);
  expect(seen.map((s) => s.channel)).toEqual(['status-503-final']);
});
