import Anthropic from '@anthropic-ai/sdk';
import { balanceOf, chargeOf, expectedCost, leasesOf, nextCall, sdkFor, startChatWorld, type EdgeHarness } from '../chat/chat.test-kit';

/**
 * The vendor's own client (@anthropic-ai/sdk), unchanged, pointed at the gateway by baseURL, against a real
 * upstream-sim process: plain call, stream helper, tool-use round trip, image input, thinking; the money of each
 * call (hold → capture of the reported usage → release of the rest).
 */
let h: EdgeHarness;
let client: Anthropic;
let accountId: string;
let key: string;
const MODEL = 'lumen-chat-1';

let close: (() => Promise<void>) | undefined;
beforeAll(async () => {
  ({ h, accountId, key, close } = await startChatWorld([MODEL, 'lumen-omni-1']));
  client = sdkFor(h, key);
}, 60_000);
afterAll(async () => {
  await close?.();
});

let seen = 0;
/** The call the test just made (waits for its batch). */
const lastCall = async () => nextCall(h, accountId, seen++);
let lastId = '';

/** The call's task row and its one capture: exactly the reported usage, never above what it reserved. */
async function expectChargedFor(usage: Anthropic.Usage, model = MODEL) {
  const call = await lastCall();
  lastId = call.id as string;
  const ledger = await chargeOf(h, call.id as string);
  const cost = await expectedCost(h, model, {
    input: usage.input_tokens,
    output: usage.output_tokens,
    cacheWrite: usage.cache_creation_input_tokens ?? 0,
    cacheRead: usage.cache_read_input_tokens ?? 0,
  });
  expect(cost).toBeGreaterThan(0n);
  expect(ledger.capture).toBe(cost);
  expect(ledger.reserved).toBeGreaterThan(cost);
  const [done] = await h.db.dataSource.query(`SELECT status, result FROM tasks WHERE id = $1`, [call.id]);
  expect(done.status).toBe('completed');
  expect(done.result).toMatchObject({ usage: { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens }, charge_rule: 'upstream_usage' });
  return ledger;
}

describe('POST /v1/messages through @anthropic-ai/sdk', () => {
  it('plain call: the upstream answer comes back as it is, charged by its usage', async () => {
    const before = await balanceOf(h, accountId);
    const msg = await client.messages.create({ model: MODEL, max_tokens: 256, messages: [{ role: 'user', content: 'Hello there' }] });
    expect(msg).toMatchObject({ type: 'message', role: 'assistant', model: MODEL, stop_reason: 'end_turn' });
    expect(msg.content).toEqual([{ type: 'text', text: 'Hello! You said: Hello there' }]);
    expect(msg.usage.input_tokens).toBeGreaterThan(0);
    const ledger = await expectChargedFor(msg.usage);
    const after = await balanceOf(h, accountId);
    expect(after.spent - before.spent).toBe(ledger.capture);
    // the money is held as the edge's credit lease (no Postgres round trip per call); the books balance
    expect(after.available + after.held + after.spent).toBe(before.available + before.held + before.spent);
  });

  it('stream helper: text events as they come, the final message assembled, charged by the final usage', async () => {
    const pieces: string[] = [];
    const stream = client.messages.stream({
      model: MODEL,
      max_tokens: 256,
      system: 'Be brief.',
      temperature: 0.2,
      metadata: { user_id: 'u-1' },
      messages: [
        { role: 'user', content: 'one' },
        { role: 'assistant', content: 'two' },
        { role: 'user', content: 'three four five' },
      ],
    });
    stream.on('text', (t) => pieces.push(t));
    const final = await stream.finalMessage();
    expect(pieces.length).toBeGreaterThan(3);
    expect(pieces.join('')).toBe('Hello! You said: three four five');
    expect(final.content).toEqual([{ type: 'text', text: 'Hello! You said: three four five' }]);
    await expectChargedFor(final.usage);
  });

  it('tool use round trip: tool_use streamed as input_json_delta, then the tool_result answered', async () => {
    const tools: Anthropic.Tool[] = [
      {
        name: 'get_weather',
        description: 'Weather of a city',
        input_schema: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] },
      },
    ];
    const ask: Anthropic.MessageParam = { role: 'user', content: 'Weather in Paris?' };
    const first = await client.messages.stream({ model: MODEL, max_tokens: 512, tools, tool_choice: { type: 'auto' }, messages: [ask] }).finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    expect(use).toMatchObject({ name: 'get_weather', input: { city: 'sim', days: 1 } });
    await expectChargedFor(first.usage);

    const second = await client.messages.create({
      model: MODEL,
      max_tokens: 512,
      tools,
      messages: [
        ask,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny, 21 C' }] },
      ],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect(second.content[0]).toEqual({ type: 'text', text: 'Hello! Tool result received: sunny, 21 C' });
    await expectChargedFor(second.usage);
  });

  it('image input (base64 and URL) reaches the upstream', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
    const msg = await client.messages.create({
      model: 'lumen-omni-1',
      max_tokens: 128,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
            { type: 'image', source: { type: 'url', url: 'https://cdn.example.com/cat.png' } },
            { type: 'text', text: 'What is this?' },
          ],
        },
      ],
    });
    expect(msg.content[0]).toEqual({ type: 'text', text: 'Hello! I see 2 images. You said: What is this?' });
    await expectChargedFor(msg.usage, 'lumen-omni-1');
  });

  it('extended thinking streams thinking_delta and signature_delta before the text', async () => {
    const final = await client.messages
      .stream({
        model: MODEL,
        max_tokens: 2048,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'think' }],
      })
      .finalMessage();
    expect(final.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    const thinking = final.content[0] as Anthropic.ThinkingBlock;
    expect(thinking.thinking).toContain('5 characters');
    expect(thinking.signature.length).toBeGreaterThan(10);
    await expectChargedFor(final.usage);
  });

  it('an upstream 400 is passed through as it is and nothing is charged', async () => {
    const err = await client.messages
      .create({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url' } }] as never }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as { error: unknown }).error).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining('source') },
    });
    const call = await lastCall();
    lastId = call.id as string;
    expect(call.status).toBe('failed');
    expect((await chargeOf(h, lastId)).capture).toBe(0n);
  });

  it('the chat call shows in /api/logs with its tokens and cost', async () => {
    const call = { id: lastId };
    const ledger = await chargeOf(h, lastId);
    const res = await fetch(`${h.baseUrl}/api/logs?limit=50`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    const items = ((await res.json()) as { data: { items: Array<Record<string, unknown>> } }).data.items;
    const item = items.find((i) => i.task_id === call.id)!;
    expect(item).toMatchObject({ type: 'task', status: 'failed', cost: Number(ledger.capture) / 1e6, settled: true });
    const ok = items.find((i) => i.type === 'task' && i.status === 'completed')!;
    expect(ok.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) });
    expect(ok.cost).toBeGreaterThan(0);
    expect(ok.cost).toBeLessThan(ok.price as number);
    // the unified task view of a chat call shows the same captured cost, not the reservation
    const task = await fetch(`${h.baseUrl}/v1/tasks/${ok.task_id as string}`, { headers: { authorization: `Bearer ${key}` } });
    expect(task.status).toBe(200);
    expect(((await task.json()) as { data: { cost: number; status: string } }).data).toMatchObject({ status: 'completed', cost: ok.cost });
  });

  it('the ledger shows each lease hold, the captures it paid and, once closed, the release of the rest', async () => {
    const before = await balanceOf(h, accountId);
    await h.background.creditLeases.close();
    const leases = await leasesOf(h, accountId);
    expect(leases.length).toBeGreaterThan(0);
    for (const l of leases) {
      expect(l).toMatchObject({ status: 'closed', hold: l.amount });
      expect(BigInt(l.release as string) + BigInt(l.used as string)).toBe(BigInt(l.amount as string));
    }
    const [{ captured }] = await h.db.dataSource.query(
      `SELECT COALESCE(sum(amount), 0)::text AS captured FROM ledger_entries WHERE account_id = $1 AND kind = 'capture'`,
      [accountId],
    );
    expect(leases.reduce((s, l) => s + BigInt(l.used as string), 0n)).toBe(BigInt(captured));
    const after = await balanceOf(h, accountId);
    expect(after).toEqual({ available: before.available + before.held, held: 0n, spent: before.spent });
    expect(after.spent).toBe(BigInt(captured));
  });
});
