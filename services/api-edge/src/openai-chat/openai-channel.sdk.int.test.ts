import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { waitFor } from '@gmg/testing';
import { TOKEN_KINDS, tokenPriceKey } from '@gmg/contracts';
import { ChannelRepository, ChatCallRepository, PriceRepository } from '@gmg/db';
import {
  addMessagesChannel,
  SIM_KEY,
  chargeOf,
  expectedCost,
  nextCall,
  sdkFor,
  startEdgeHarness,
  startSim,
  type EdgeHarness,
  type SimHandle,
} from '../chat/chat.test-kit';

/**
 * `openai` chat channels (docs/upstreams/openai.md, "Chat"), through real HTTP: the official `openai` client
 * (`/v1/chat/completions`, passed through) and the official messages SDK (`/v1/messages`, translated to chat
 * completions and back), against a real upstream-sim process in its strict chat-completions mode: create, stream,
 * a two-round tool loop, an image part; each call charged exactly once, by the usage the vendor reported, with the
 * same price rule as a `messages` channel.
 */
let h: EdgeHarness;
let sim: SimHandle;
let openai: OpenAI;
let anthropic: Anthropic;
let accountId: string;
const MODEL = 'lumen-chat-1';
const FAILOVER = 'lumen-chat-1-mini';
let healthyId: string;
const VENDOR_MODEL = 'gpt-sim-chat';
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

beforeAll(async () => {
  [h, sim] = await Promise.all([startEdgeHarness({ env: { MESSAGES_CHANNEL_CACHE_TTL_MS: '0' } }), startSim()]);
  // through the management API, as an operator adds one: the chat model listed by name, its vendor name mapped
  const created = await fetch(`${h.baseUrl}/api/channels`, {
    method: 'POST',
    headers: { authorization: `Bearer ${h.config.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'sim-openai',
      protocol: 'openai',
      base_url: `${sim.url}/openai`,
      api_key: SIM_KEY,
      models: [MODEL],
      model_map: { [MODEL]: VENDOR_MODEL },
    }),
  });
  expect(created.status).toBe(201);
  // failover across protocols: an openai channel refusing the gateway's key (tried first), then a messages channel
  await new ChannelRepository(h.db.dataSource).create({
    name: 'bad-key-openai',
    protocol: 'openai',
    baseUrl: `${sim.url}/openai`,
    apiKey: 'wrong-key',
    models: [FAILOVER],
    priority: 10,
  });
  healthyId = (await addMessagesChannel(h, 'sim-messages', sim, [FAILOVER], 0)).id;
  const c = await h.newCustomer({ balance: 50 });
  accountId = c.accountId;
  openai = new OpenAI({ apiKey: c.key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
  anthropic = sdkFor(h, c.key);
}, 60_000);
afterAll(async () => {
  await h?.background.creditLeases.close();
  await sim?.proc.stop();
  await h?.close();
});

let seen = 0;

const simCalls = () => sim.logLines().filter((l) => l.msg === 'openai chat call answered');
let simSeen = 0;
/** The sim's log line of the chat call just made (its output arrives a little after the answer): the model it got and the usage it reported. */
async function lastSimCall(): Promise<{ model: string; usage: OpenAI.CompletionUsage }> {
  const calls = await waitFor(() => (simCalls().length > simSeen ? simCalls() : undefined), { timeoutMs: 5000, what: 'the sim log line of the call' });
  simSeen = calls.length;
  return calls[calls.length - 1] as unknown as { model: string; usage: OpenAI.CompletionUsage };
}
const simUsage = async () => (await lastSimCall()).usage;

/** The call just made: recorded once, charged exactly the price of the usage the vendor reported, by the same rule as a messages channel. */
async function expectChargedFor(u: OpenAI.CompletionUsage) {
  const call = await nextCall(h, accountId, seen++);
  const ledger = await chargeOf(h, call.id as string);
  const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
  const cost = await expectedCost(h, MODEL, { input: u.prompt_tokens - cached, output: u.completion_tokens, cacheRead: cached });
  expect(cost).toBeGreaterThan(0n);
  expect(ledger.capture).toBe(cost);
  expect(call.status).toBe('completed');
  expect(call.result).toMatchObject({ charge_rule: 'upstream_usage', usage: { input_tokens: u.prompt_tokens - cached, output_tokens: u.completion_tokens } });
}

describe('POST /v1/chat/completions to an openai channel (the official openai client)', () => {
  it('create: the vendor answer passes through, the model name mapped on the way up, charged by its usage', async () => {
    const c = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hello there' }] });
    expect(c.choices[0].message.content).toBe('Hello! You said: Hello there');
    expect(c.choices[0].finish_reason).toBe('stop');
    const simCall = await lastSimCall();
    expect(simCall.model).toBe(VENDOR_MODEL);
    expect(c.usage).toEqual(simCall.usage);
    await expectChargedFor(c.usage!);
  });

  it('stream without include_usage: no usage chunk reaches the client, the call is still charged by the usage the gateway asked for', async () => {
    const stream = await openai.chat.completions.create({ model: MODEL, stream: true, messages: [{ role: 'user', content: 'one two three' }] });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Hello! You said: one two three');
    expect(chunks.every((c) => c.choices.length === 1 && !c.usage)).toBe(true);
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe('stop');
    await expectChargedFor(await simUsage());
  });

  it('stream with include_usage: the usage chunk is the vendor’s, the charge follows it', async () => {
    const stream = openai.chat.completions.stream({
      model: MODEL,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'four five' }],
    });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0].message.content).toBe('Hello! You said: four five');
    expect(final.usage).toEqual(await simUsage());
    await expectChargedFor(final.usage!);
  });

  it('a two-round tool loop (the assistant turn with tool_calls and content "" sent back as the client sends it) and an image part', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
    ];
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
          { type: 'text', text: 'Weather where this was taken?' },
        ],
      },
    ];
    const first = await openai.chat.completions.create({ model: MODEL, tools, messages });
    const call = first.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'sim' });
    expect(first.usage).toEqual(await simUsage());
    await expectChargedFor(first.usage!);
    messages.push({ role: 'assistant', content: '', tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: 'sunny' });
    const second = await openai.chat.completions.create({ model: MODEL, tools, messages });
    expect(second.choices[0].message.content).toBe('Hello! I see 1 image. Tool result received: sunny');
    expect(second.usage).toEqual(await simUsage());
    await expectChargedFor(second.usage!);
  });
});

describe('POST /v1/messages to an openai channel (the official messages SDK)', () => {
  it('create: translated to chat completions and back, usage in the messages shape, charged by it', async () => {
    const msg = await anthropic.messages.create({ model: MODEL, max_tokens: 256, system: 'Be brief.', messages: [{ role: 'user', content: 'Hello there' }] });
    expect(msg).toMatchObject({ type: 'message', role: 'assistant', model: MODEL, stop_reason: 'end_turn' });
    expect(msg.content).toEqual([{ type: 'text', text: 'Hello! You said: Hello there' }]);
    const simCall = await lastSimCall();
    expect(simCall.model).toBe(VENDOR_MODEL);
    const u = simCall.usage;
    expect(msg.usage).toMatchObject({ input_tokens: u.prompt_tokens, output_tokens: u.completion_tokens });
    await expectChargedFor(u);
  });

  it('stream: every event the SDK expects, in order, the final message with its usage', async () => {
    const events: string[] = [];
    const pieces: string[] = [];
    const stream = anthropic.messages.stream({ model: MODEL, max_tokens: 256, messages: [{ role: 'user', content: 'three four five' }] });
    stream.on('streamEvent', (e) => events.push(e.type));
    stream.on('text', (t) => pieces.push(t));
    const final = await stream.finalMessage();
    expect(pieces.join('')).toBe('Hello! You said: three four five');
    expect(events[0]).toBe('message_start');
    expect(events.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(events.filter((e) => e === 'content_block_start')).toHaveLength(1);
    expect(events.indexOf('content_block_stop')).toBe(events.length - 3);
    expect(final.stop_reason).toBe('end_turn');
    const u = await simUsage();
    expect(final.usage).toMatchObject({ input_tokens: u.prompt_tokens, output_tokens: u.completion_tokens });
    await expectChargedFor(u);
  });

  it('a two-round tool loop over a stream, with an image part', async () => {
    const tools: Anthropic.Tool[] = [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
    const messages: Anthropic.MessageParam[] = [
      {
        role: 'user',
        content: [
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
          { type: 'text', text: 'Weather where this was taken?' },
        ],
      },
    ];
    const first = await anthropic.messages.stream({ model: MODEL, max_tokens: 256, tools, messages }).finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    expect(use).toMatchObject({ name: 'get_weather', input: { city: 'sim' } });
    await expectChargedFor(await simUsage());
    messages.push({ role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] });
    const second = await anthropic.messages.create({ model: MODEL, max_tokens: 256, tools, messages });
    expect(second.content).toEqual([{ type: 'text', text: 'Hello! I see 1 image. Tool result received: sunny' }]);
    await expectChargedFor(await simUsage());
  });

  it('a block chat completions cannot carry (a document), on a model only openai channels serve: a 400 naming it, nothing charged', async () => {
    const doc = { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'a note' } } as const;
    const err = await anthropic.messages
      .create({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: [doc, { type: 'text', text: 'Summarise' }] }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.APIError>).message).toContain('messages[0].content[0].type');
    expect(await h.db.dataSource.query(`SELECT id FROM tasks WHERE account_id = $1 AND pool = 'chat'`, [accountId])).toHaveLength(seen);
  });

  it('a vendor refusal comes back in the messages error envelope', async () => {
    const err = await anthropic.messages
      .create({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'x [sim:429]' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.RateLimitError);
    expect((err as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    const call = await nextCall(h, accountId, seen++);
    expect(call.status).toBe('failed');
    expect((await chargeOf(h, call.id as string)).capture).toBe(0n);
  });
});

describe('failover from an openai channel to a messages channel, before the first byte', () => {
  it('the chat channel list holds the openai channels that name the model, never a media one listing no models', async () => {
    const names = async (model: string) => (await new ChatCallRepository(h.db.dataSource).channels(model, 'default')).map((c) => [c.name, c.protocol]);
    expect(await names(MODEL)).toEqual([['sim-openai', 'openai']]);
    expect(await names(FAILOVER)).toEqual([
      ['bad-key-openai', 'openai'],
      ['sim-messages', 'messages'],
    ]);
  });

  it.each([false, true])('both clients are answered by the next channel when the openai channel refuses the gateway’s key (stream: %s)', async (stream) => {
    const c = stream
      ? await openai.chat.completions.stream({ model: FAILOVER, messages: [{ role: 'user', content: 'Hello there' }] }).finalChatCompletion()
      : await openai.chat.completions.create({ model: FAILOVER, messages: [{ role: 'user', content: 'Hello there' }] });
    expect(c.choices[0].message.content).toBe('Hello! You said: Hello there');
    const m = stream
      ? await anthropic.messages.stream({ model: FAILOVER, max_tokens: 64, messages: [{ role: 'user', content: 'Hello there' }] }).finalMessage()
      : await anthropic.messages.create({ model: FAILOVER, max_tokens: 64, messages: [{ role: 'user', content: 'Hello there' }] });
    expect(m.content).toEqual([{ type: 'text', text: 'Hello! You said: Hello there' }]);
    for (let i = 0; i < 2; i++) {
      const call = await nextCall(h, accountId, seen++);
      expect(call.status).toBe('completed');
      const [row] = await h.db.dataSource.query(`SELECT channel_id FROM tasks WHERE id = $1`, [call.id]);
      expect(row.channel_id).toBe(healthyId);
    }
  });
});

describe('a custom chat model name an openai channel lists', () => {
  const CUSTOM = 'house-chat-1';
  it('is callable on both endpoints by a key that lists it, listed in the catalog for both, charged by its own prices', async () => {
    await new PriceRepository(h.db.dataSource).upsertMany(
      TOKEN_KINDS.map((k, i) => ({ key: tokenPriceKey(CUSTOM, k), unitPrice: BigInt(i + 1) * 1_000_000n, description: 'custom chat test price' })),
    );
    await new ChannelRepository(h.db.dataSource).create({
      name: 'house-openai',
      protocol: 'openai',
      baseUrl: `${sim.url}/openai`,
      apiKey: SIM_KEY,
      models: [CUSTOM],
    });
    const c = await h.newCustomer({ balance: 5, models: [CUSTOM] });
    const models = (await (await fetch(`${h.baseUrl}/v1/models`, { headers: { authorization: `Bearer ${c.key}` } })).json()) as {
      data: Array<Record<string, unknown>>;
    };
    expect(models.data.find((m) => m.id === CUSTOM)?.supported_endpoint_types).toEqual(expect.arrayContaining(['messages', 'chat-completions']));
    const chat = await new OpenAI({ apiKey: c.key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 }).chat.completions.create({
      model: CUSTOM,
      messages: [{ role: 'user', content: 'Hello there' }],
    });
    expect(chat.choices[0].message.content).toBe('Hello! You said: Hello there');
    expect((await lastSimCall()).model).toBe(CUSTOM);
    const msg = await sdkFor(h, c.key).messages.create({ model: CUSTOM, max_tokens: 64, messages: [{ role: 'user', content: 'Hello there' }] });
    expect(msg.content).toEqual([{ type: 'text', text: 'Hello! You said: Hello there' }]);
    const u = (await lastSimCall()).usage;
    for (const usage of [chat.usage!, u]) {
      const call = await nextCall(h, c.accountId, usage === u ? 1 : 0);
      const cost = await expectedCost(h, CUSTOM, { input: usage.prompt_tokens, output: usage.completion_tokens });
      expect(cost).toBeGreaterThan(0n);
      expect((await chargeOf(h, call.id as string)).capture).toBe(cost);
    }
  });
});
