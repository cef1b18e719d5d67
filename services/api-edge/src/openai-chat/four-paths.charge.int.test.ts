import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { ChannelRepository } from '@gmg/db';
import { chargeOf, expectedCost, nextCall, sdkFor, startEdgeHarness, type EdgeHarness } from '../chat/chat.test-kit';

/**
 * Issue 36: the same usage costs the same on all four paths — the official messages SDK and the official `openai`
 * client, each against a `messages` channel and an `openai` channel (translated or passed through), whole answers
 * and streams. The vendor is a local server that reports one fixed usage in each protocol's own shape (120 input
 * tokens, 30 output), so the only thing that can differ is the gateway's reading of it.
 */
const USAGE = { input: 120, output: 30 };
const MODEL = 'lumen-chat-1';

/** What a vendor of each protocol answers, whole or streamed, always with USAGE. */
function vendorAnswer(path: string, body: Record<string, any>, res: http.ServerResponse): void {
  const sse = (events: Array<[string | null, unknown]>) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const [event, data] of events) res.write(`${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
    res.end();
  };
  if (path === '/v1/messages') {
    const message = { id: 'msg_fixed', type: 'message', role: 'assistant', model: body.model, stop_sequence: null };
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          ...message,
          content: [{ type: 'text', text: 'fixed' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: USAGE.input, output_tokens: USAGE.output },
        }),
      );
      return;
    }
    sse([
      [
        'message_start',
        { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { input_tokens: USAGE.input, output_tokens: 1 } } },
      ],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'fixed' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: USAGE.output } }],
      ['message_stop', { type: 'message_stop' }],
    ]);
    return;
  }
  const usage = { prompt_tokens: USAGE.input, completion_tokens: USAGE.output, total_tokens: USAGE.input + USAGE.output };
  const base = { id: 'chatcmpl-fixed', created: 1, model: body.model };
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        ...base,
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: 'fixed' }, finish_reason: 'stop', logprobs: null }],
        usage,
      }),
    );
    return;
  }
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    [null, { ...base, object: 'chat.completion.chunk', choices, ...extra }] as [null, unknown];
  sse([
    chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]),
    chunk([{ index: 0, delta: { content: 'fixed' }, finish_reason: null }]),
    chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
    ...(body.stream_options?.include_usage ? [chunk([], { usage })] : []),
    [null, '[DONE]'],
  ]);
}

let h: EdgeHarness;
let vendor: http.Server;
let seen: Record<string, number>;
const customers: Record<'messages' | 'openai', { accountId: string; key: string }> = {} as never;

beforeAll(async () => {
  vendor = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => vendorAnswer(req.url ?? '', JSON.parse(raw || '{}') as Record<string, any>, res));
  });
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
  h = await startEdgeHarness({ env: { MESSAGES_CHANNEL_CACHE_TTL_MS: '0' } });
  // one channel of each protocol, each serving one group: a customer of each group reaches one kind only
  const channels = new ChannelRepository(h.db.dataSource);
  await channels.create({ name: 'fixed-messages', protocol: 'messages', baseUrl: url, apiKey: 'k', models: [MODEL], groups: ['via-messages'] });
  await channels.create({ name: 'fixed-openai', protocol: 'openai', baseUrl: url, apiKey: 'k', models: [MODEL], groups: ['via-openai'] });
  for (const kind of ['messages', 'openai'] as const) customers[kind] = await h.newCustomer({ balance: 50, groupName: `via-${kind}` });
  seen = { messages: 0, openai: 0 };
}, 60_000);
afterAll(async () => {
  await h?.background.creditLeases.close();
  await h?.close();
  await new Promise<void>((resolve) => vendor?.close(() => resolve()));
});

/** The capture of the channel kind's next recorded call. */
async function captured(kind: 'messages' | 'openai'): Promise<bigint> {
  const call = await nextCall(h, customers[kind].accountId, seen[kind]++);
  expect(call.status).toBe('completed');
  return (await chargeOf(h, call.id as string)).capture;
}

it('the same usage costs the same through both clients and both kinds of channel, whole and streamed', async () => {
  const price = await expectedCost(h, MODEL, USAGE);
  expect(price).toBeGreaterThan(0n);
  const charges: Record<string, bigint> = {};
  for (const kind of ['messages', 'openai'] as const) {
    const anthropic = sdkFor(h, customers[kind].key);
    const openai = new OpenAI({ apiKey: customers[kind].key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const msg = await anthropic.messages.create({ model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
    expect(msg.usage).toMatchObject({ input_tokens: USAGE.input, output_tokens: USAGE.output });
    charges[`messages SDK → ${kind} channel`] = await captured(kind);
    const streamed = await anthropic.messages.stream({ model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    expect(streamed.usage.output_tokens).toBe(USAGE.output);
    charges[`messages SDK → ${kind} channel, streamed`] = await captured(kind);
    const chat = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] });
    expect(chat.usage).toMatchObject({ prompt_tokens: USAGE.input, completion_tokens: USAGE.output });
    charges[`openai client → ${kind} channel`] = await captured(kind);
    const stream = await openai.chat.completions.create({ model: MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    expect(text).toBe('fixed');
    charges[`openai client → ${kind} channel, streamed`] = await captured(kind);
  }
  expect(Object.keys(charges)).toHaveLength(8);
  expect(charges).toEqual(Object.fromEntries(Object.keys(charges).map((k) => [k, price])));
});
