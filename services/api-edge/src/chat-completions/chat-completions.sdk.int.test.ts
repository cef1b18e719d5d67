import OpenAI from 'openai';
import { waitFor } from '@gmg/testing';
import { balanceOf, chargeOf, chatCalls, expectedCost, nextCall, startChatWorld, type EdgeHarness, type SimHandle } from '../chat/chat.test-kit';

/**
 * The official chat-completions client (`openai`), unchanged, pointed at the gateway by baseURL alone, against a
 * real upstream-sim process speaking the messages protocol: the translation both ways, streaming with usage, a
 * client abort, the errors in that protocol's envelope; and the money of each call, on the same call record and
 * credit lease as /v1/messages (hold → capture of the reported usage → release of the rest).
 */
let h: EdgeHarness;
let sim: SimHandle;
let client: OpenAI;
let accountId: string;
let key: string;
const MODEL = 'lumen-chat-1';
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

let close: (() => Promise<void>) | undefined;
beforeAll(async () => {
  ({ h, sim, accountId, key, close } = await startChatWorld([MODEL, 'lumen-omni-1']));
  client = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
}, 60_000);
afterAll(async () => {
  await close?.();
});

let seen = 0;
/** The call the test just made (waits for its batch). */
const lastCall = async () => nextCall(h, accountId, seen++);

/** The messages usage behind a chat usage (the sim reports no cache tokens: all prompt tokens are plain input). */
const tokensOf = (u: OpenAI.CompletionUsage) => ({
  input: u.prompt_tokens - (u.prompt_tokens_details?.cached_tokens ?? 0),
  output: u.completion_tokens,
  cacheRead: u.prompt_tokens_details?.cached_tokens ?? 0,
});

/** The call's record and its one capture: exactly the usage the client was shown, never above what it reserved. */
async function expectChargedFor(usage: OpenAI.CompletionUsage | undefined, model = MODEL) {
  expect(usage).toBeDefined();
  expect(usage!.total_tokens).toBe(usage!.prompt_tokens + usage!.completion_tokens);
  const call = await lastCall();
  const ledger = await chargeOf(h, call.id as string);
  const cost = await expectedCost(h, model, tokensOf(usage!));
  expect(cost).toBeGreaterThan(0n);
  expect(ledger.capture).toBe(cost);
  expect(ledger.reserved).toBeGreaterThan(cost);
  const [done] = await h.db.dataSource.query(`SELECT status, result, request FROM tasks WHERE id = $1`, [call.id]);
  expect(done.status).toBe('completed');
  expect(done.result).toMatchObject({
    usage: { input_tokens: tokensOf(usage!).input, output_tokens: usage!.completion_tokens },
    charge_rule: 'upstream_usage',
  });
  expect(done.request).toMatchObject({ endpoint: 'POST /v1/chat/completions' });
  return ledger;
}

describe('POST /v1/chat/completions through the openai client', () => {
  it('text: system and multi-turn in, one choice with finish_reason stop out, charged by its usage', async () => {
    const before = await balanceOf(h, accountId);
    const c = await client.chat.completions.create({
      model: MODEL,
      max_completion_tokens: 256,
      temperature: 0.2,
      top_p: 0.9,
      stop: ['\n\n'],
      user: 'u-1',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'one' },
        { role: 'assistant', content: 'two' },
        { role: 'user', content: 'three four five' },
      ],
    });
    expect(c).toMatchObject({ object: 'chat.completion', model: MODEL, id: expect.stringMatching(/^chatcmpl-/) });
    expect(c.choices).toEqual([
      { index: 0, message: { role: 'assistant', content: 'Hello! You said: three four five', refusal: null }, logprobs: null, finish_reason: 'stop' },
    ]);
    const ledger = await expectChargedFor(c.usage);
    const after = await balanceOf(h, accountId);
    expect(after.spent - before.spent).toBe(ledger.capture);
    expect(after.available + after.held + after.spent).toBe(before.available + before.held + before.spent);
  });

  it('image parts (a data URL and an https URL) reach the upstream as image blocks', async () => {
    const c = await client.chat.completions.create({
      model: 'lumen-omni-1',
      max_tokens: 128,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
            { type: 'image_url', image_url: { url: 'https://cdn.example.com/cat.png' } },
            { type: 'text', text: 'What is this?' },
          ],
        },
      ],
    });
    expect(c.choices[0].message.content).toBe('Hello! I see 2 images. You said: What is this?');
    await expectChargedFor(c.usage, 'lumen-omni-1');
  });

  it('tools round trip: tool_calls streamed (id, name, arguments in pieces), then the tool message answered', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather of a city',
          parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] },
        },
      },
    ];
    const ask: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'Weather in Paris?' };
    let usage: OpenAI.CompletionUsage | undefined;
    const stream = client.chat.completions.stream({
      model: MODEL,
      max_tokens: 512,
      tools,
      tool_choice: 'auto',
      stream_options: { include_usage: true },
      messages: [ask],
    });
    stream.on('chunk', (chunk) => (usage = chunk.usage ?? usage));
    const first = await stream.finalChatCompletion();
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    const call = first.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call).toMatchObject({ id: expect.stringMatching(/^toolu_/), type: 'function', function: { name: 'get_weather' } });
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'sim', days: 1 });
    await expectChargedFor(usage);

    const second = await client.chat.completions.create({
      model: MODEL,
      max_tokens: 512,
      tools,
      messages: [ask, first.choices[0].message as OpenAI.ChatCompletionMessageParam, { role: 'tool', tool_call_id: call.id, content: 'sunny, 21 C' }],
    });
    expect(second.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'Hello! Tool result received: sunny, 21 C' } });
    await expectChargedFor(second.usage);
  });

  it('.stream() with include_usage: content deltas as they come, a usage chunk with no choices last, then [DONE]', async () => {
    const pieces: string[] = [];
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    const stream = client.chat.completions.stream({
      model: MODEL,
      max_tokens: 256,
      stream_options: { include_usage: true },
      messages: [
        { role: 'developer', content: 'Be brief.' },
        { role: 'user', content: 'six seven eight' },
      ],
    });
    stream.on('content', (delta) => pieces.push(delta));
    stream.on('chunk', (c) => chunks.push(c));
    const final = await stream.finalChatCompletion();
    expect(pieces.length).toBeGreaterThan(3);
    expect(pieces.join('')).toBe('Hello! You said: six seven eight');
    expect(final.choices[0]).toMatchObject({ finish_reason: 'stop', message: { role: 'assistant', content: 'Hello! You said: six seven eight' } });
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(chunks.slice(0, -1).every((c) => c.usage === null && c.id === last.id)).toBe(true);
    await expectChargedFor(last.usage ?? undefined);
  });

  it('a raw stream ends with data: [DONE] and without include_usage carries no usage', async () => {
    const res = await fetch(`${h.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: MODEL, max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await res.text();
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(text).not.toContain('"usage"');
    expect(text).not.toContain('event:');
    await lastCall();
  });

  it('a client aborting a slow stream closes the upstream request within a second; charged input + relayed output', async () => {
    let received = '';
    const stream = client.chat.completions.stream({
      model: MODEL,
      max_tokens: 4096,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'take your time [sim:slow]' }],
    });
    const aborted = new Promise<number>((resolve) =>
      stream.on('content', (delta) => {
        received += delta;
        if (received.length > 20) {
          stream.abort();
          resolve(Date.now());
        }
      }),
    );
    await stream.done().catch(() => undefined);
    const at = await aborted;
    const closed = await waitFor(() => sim.logLines().find((l) => l.msg === 'messages stream closed by the client before its end'), {
      timeoutMs: 1000,
      intervalMs: 20,
      what: 'the sim logging the close',
    });
    expect(Date.parse(String(closed.time))).toBeLessThan(at + 1000);
    const answered = sim
      .logLines()
      .filter((l) => l.msg === 'messages call answered')
      .at(-1)!;
    const full = answered.usage as { input_tokens: number; output_tokens: number };
    const id = (await lastCall()).id as string;
    const ledger = await chargeOf(h, id);
    const [task] = await h.db.dataSource.query(`SELECT result FROM tasks WHERE id = $1`, [id]);
    expect(task.result).toMatchObject({ charge_rule: 'relayed_output', reason: 'client_closed', usage: { input_tokens: full.input_tokens } });
    const out = task.result.usage.output_tokens as number;
    expect(out).toBeGreaterThanOrEqual(Math.ceil(received.length / 4));
    expect(out).toBeLessThan(full.output_tokens);
    expect(ledger.capture).toBe(await expectedCost(h, MODEL, { input: full.input_tokens, output: out }));
    expect(ledger.capture).toBeLessThan(ledger.reserved);
  });

  it('n: 2 is a 400 naming the parameter in the chat envelope; no call recorded, nothing held or spent', async () => {
    const calls = await chatCalls(h, accountId);
    const before = await balanceOf(h, accountId);
    const err = await client.chat.completions.create({ model: MODEL, n: 2, messages: [{ role: 'user', content: 'twice' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect({ param: e.param, code: e.code, type: e.type }).toEqual({ param: 'n', code: 'unsupported_parameter', type: 'invalid_request_error' });
    expect(e.message).toContain('`n` is not supported');
    expect(await chatCalls(h, accountId)).toEqual(calls);
    expect(await balanceOf(h, accountId)).toEqual(before);
  });

  it('models.list() of the client lists the chat models, each naming chat-completions among its endpoint types', async () => {
    const models: Array<OpenAI.Model & { supported_endpoint_types?: string[] }> = [];
    for await (const m of client.models.list()) models.push(m);
    const chat = models.filter((m) => m.supported_endpoint_types?.includes('chat-completions')).map((m) => m.id);
    expect(chat.sort()).toEqual(['lumen-chat-1', 'lumen-chat-1-mini', 'lumen-omni-1']);
    expect(models.find((m) => m.id === 'lumen-2-pro')!.supported_endpoint_types).not.toContain('chat-completions');
  });

  it('the same conversation on /v1/messages and /v1/chat/completions costs the same', async () => {
    const content = 'same words both ways';
    const chat = await client.chat.completions.create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content }] });
    const viaChat = await expectChargedFor(chat.usage);
    const res = await fetch(`${h.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content }] }),
    });
    expect(res.status).toBe(200);
    const msg = (await res.json()) as { usage: { input_tokens: number; output_tokens: number } };
    expect({ input: msg.usage.input_tokens, output: msg.usage.output_tokens }).toEqual({
      input: chat.usage!.prompt_tokens,
      output: chat.usage!.completion_tokens,
    });
    const call = await lastCall();
    expect((await chargeOf(h, call.id as string)).capture).toBe(viaChat.capture);
  });
});

describe('errors the gateway answers itself, in the chat envelope {error: {message, type, param, code}}', () => {
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${h.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const ok = { model: MODEL, messages: [{ role: 'user', content: 'hi' }] };

  it.each([
    ['an image model', { ...ok, model: 'lumen-2-pro' }, {}, 400, 'invalid_request_error', 'model', 'chat_model'],
    ['logprobs', { ...ok, logprobs: true }, {}, 400, 'invalid_request_error', 'logprobs', 'unsupported_parameter'],
    ['audio output', { ...ok, audio: { voice: 'alloy', format: 'wav' } }, {}, 400, 'invalid_request_error', 'audio', 'unsupported_parameter'],
    [
      'a bad data URL',
      { ...ok, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:text/plain;base64,aGk=' } }] }] },
      {},
      400,
      'invalid_request_error',
      'messages[0].content[0].image_url.url',
      'data_url',
    ],
    ['invalid JSON', '{"model":', {}, 400, 'invalid_request_error', null, null],
    ['an unknown key', ok, { authorization: 'Bearer sk-nope' }, 401, 'authentication_error', null, null],
  ])('%s', async (_what, body, headers, status, type, param, code) => {
    const calls = await chatCalls(h, accountId);
    const res = await post(body, headers);
    expect(res.status).toBe(status);
    expect(await res.json()).toEqual({ error: { message: expect.any(String), type, param, code } });
    expect(await chatCalls(h, accountId)).toEqual(calls);
  });

  it('the client raises them as its own typed errors (401 AuthenticationError, 403 PermissionDeniedError)', async () => {
    const wrongKey = await new OpenAI({ apiKey: 'sk-nope', baseURL: `${h.baseUrl}/v1`, maxRetries: 0 }).chat.completions
      .create(ok as never)
      .catch((e: unknown) => e);
    expect(wrongKey).toBeInstanceOf(OpenAI.AuthenticationError);
    const limited = await h.newCustomer({ balance: 5, models: ['lumen-chat-1'] });
    const forbidden = await new OpenAI({ apiKey: limited.key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 }).chat.completions
      .create({ ...ok, model: 'lumen-chat-1-mini' } as never)
      .catch((e: unknown) => e);
    expect(forbidden).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((forbidden as { param: unknown }).param).toBe('model');
  });

  it('GET is 405 in the same envelope', async () => {
    const res = await fetch(`${h.baseUrl}/v1/chat/completions`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(405);
    expect(await res.json()).toMatchObject({ error: { type: expect.any(String), param: null } });
  });
});
