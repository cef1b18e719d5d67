import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import OpenAI from 'openai';
import { ChannelRepository } from '@gmg/db';
import { startForwardProxy, type ForwardProxy } from '@gmg/testing';
import { closeChannelDispatchers } from '@gmg/upstream';
import { chargeOf, nextCall, startEdgeHarness, type EdgeHarness } from '../chat/chat.test-kit';

/**
 * Per-channel overrides on `/v1/chat/completions` to an `openai` channel (docs/upstreams.md, "Per-channel
 * overrides"): the channel's fixed body parameters and headers reach the vendor through its proxy, while the fields
 * billing reads stay the gateway's — a streamed call still asks the vendor for its usage
 * (`stream_options.include_usage`), whatever the channel's body says, and is charged from it.
 */
let h: EdgeHarness;
let proxy: ForwardProxy;
let vendor: Server;
let client: OpenAI;
let accountId: string;
const seen: Array<{ viaProxy: boolean; org?: string; body: Record<string, unknown> }> = [];

function startVendor(): Promise<Server> {
  const app = express();
  app.use(express.json());
  app.post('/v1/chat/completions', (req, res) => {
    const body = req.body as Record<string, unknown>;
    seen.push({ viaProxy: proxy.carried(req.socket.remotePort), org: req.header('x-org'), body });
    if (body.stream !== true) {
      return void res.json({
        id: 'c2',
        object: 'chat.completion',
        created: 1,
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'whole answer' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 },
      });
    }
    const chunk = (o: object) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: body.model, ...o })}\n\n`;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'hi there' }, finish_reason: null }] }));
    res.write(chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }));
    const usage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage;
    if (usage) res.write(chunk({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } }));
    res.end('data: [DONE]\n\n');
  });
  return new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
}

beforeAll(async () => {
  [h, proxy, vendor] = await Promise.all([startEdgeHarness({ env: { MESSAGES_CHANNEL_CACHE_TTL_MS: '0' } }), startForwardProxy(), startVendor()]);
  await new ChannelRepository(h.db.dataSource).create({
    name: 'openai-behind-proxy',
    protocol: 'openai',
    baseUrl: `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`,
    apiKey: 'vendor-key-0123456789',
    models: ['lumen-chat-1'],
    // the body's stream fields are refused by the management API; written here directly, they still never win
    settings: { proxy: proxy.url, headers: { 'x-org': 'org-9' }, body: { temperature: 0.4, stream: true, stream_options: { include_usage: false } } },
  });
  const c = await h.newCustomer({ balance: 50 });
  accountId = c.accountId;
  client = new OpenAI({ apiKey: c.key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
}, 60_000);

afterAll(async () => {
  await h?.background.creditLeases.close();
  await h?.close();
  await closeChannelDispatchers();
  vendor?.closeAllConnections();
  await new Promise((r) => vendor?.close(r));
  await proxy?.close();
});

it("streams through the channel's proxy with its header and body parameters; the usage the gateway bills by is still asked for and charged", async () => {
  const stream = await client.chat.completions.create({ model: 'lumen-chat-1', messages: [{ role: 'user', content: 'hello' }], stream: true });
  let text = '';
  for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
  expect(text).toBe('hi there');
  expect(seen).toHaveLength(1);
  expect(seen[0]).toMatchObject({ viaProxy: true, org: 'org-9', body: { temperature: 0.4, stream: true, stream_options: { include_usage: true } } });
  const call = await nextCall(h, accountId, 0);
  expect(call.status).toBe('completed');
  expect((await chargeOf(h, call.id as string)).capture).toBeGreaterThan(0n);
});

it("keeps a non-streamed call whole: the channel's `stream: true` is never added to a request that did not ask for one", async () => {
  seen.length = 0;
  const answer = await client.chat.completions.create({ model: 'lumen-chat-1', messages: [{ role: 'user', content: 'hello' }] });
  expect(answer.choices[0]?.message.content).toBe('whole answer');
  expect(seen).toHaveLength(1);
  expect(seen[0]!.body).toMatchObject({ temperature: 0.4 });
  expect(seen[0]!.body).not.toHaveProperty('stream');
  expect(seen[0]!.body).not.toHaveProperty('stream_options');
});
