import OpenAI from 'openai';
import { PriceRepository } from '@gmg/db';
import { waitFor } from '@gmg/testing';
import { chargeOf, chatCalls, expectedCost, nextCall, startFailoverWorld, type EdgeHarness, type SimHandle } from '../chat/chat.test-kit';

/**
 * The failure paths of /v1/messages, seen through the chat-completions protocol (the official `openai` client):
 * failover before the first byte, an upstream refusal translated into the chat envelope with its status, an
 * upstream dying mid-stream (an error chunk, no `[DONE]`), each charged as on /v1/messages. A custom model name a
 * channel lists is served here too.
 */
let h: EdgeHarness;
let sick: SimHandle;
let client: OpenAI;
let accountId: string;
const HOUSE = 'house-chat';

let close: () => Promise<void>;

beforeAll(async () => {
  ({ h, sick, close } = await startFailoverWorld(['lumen-chat-1-mini', HOUSE], { PRICE_CACHE_TTL_MS: '0' }));
  const kinds = ['input', 'output', 'cache_write', 'cache_read'];
  await new PriceRepository(h.db.dataSource).upsertMany(kinds.map((k) => ({ key: `${HOUSE}@${k}`, unitPrice: 1_000_000n, description: 'test' })));
  const c = await h.newCustomer({ balance: 50, models: ['lumen-chat-1', 'lumen-chat-1-mini', HOUSE] });
  accountId = c.accountId;
  client = new OpenAI({ apiKey: c.key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
}, 60_000);
afterAll(async () => {
  await close?.();
});

let seen = 0;
const lastCallId = async () => (await nextCall(h, accountId, seen++)).id as string;
const refused = (sim: SimHandle, since: string) => sim.logLines().filter((l) => l.msg === 'messages call refused' && String(l.time) >= since);

it.each([false, true])(
  'a 529 on the first channel fails over to the next before the first byte: one clean answer, charged once (stream: %s)',
  async (stream) => {
    const since = new Date().toISOString();
    const params = { model: 'lumen-chat-1-mini', max_tokens: 64, messages: [{ role: 'user' as const, content: 'fail over please' }] };
    let text: string | null;
    let usage: OpenAI.CompletionUsage | undefined;
    if (stream) {
      const s = client.chat.completions.stream({ ...params, stream_options: { include_usage: true } });
      s.on('chunk', (c) => (usage = c.usage ?? usage));
      text = (await s.finalChatCompletion()).choices[0].message.content;
    } else {
      const c = await client.chat.completions.create(params);
      ({ usage } = c);
      text = c.choices[0].message.content;
    }
    expect(text).toBe('Hello! You said: fail over please');
    await waitFor(() => refused(sick, since).length > 0, { timeoutMs: 3000, what: 'the 529 in the sick sim log' });
    expect(refused(sick, since)).toEqual([expect.objectContaining({ status: 529 })]);
    const ledger = await chargeOf(h, await lastCallId());
    expect((await chatCalls(h, accountId)).length).toBe(seen);
    expect(ledger.capture).toBe(await expectedCost(h, 'lumen-chat-1-mini', { input: usage!.prompt_tokens, output: usage!.completion_tokens }));
  },
);

it('every channel refusing: the upstream 529 comes back with its status in the chat envelope (a custom name a channel lists); nothing charged', async () => {
  const err = await client.chat.completions.create({ model: HOUSE, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(OpenAI.APIError);
  expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(529);
  expect((err as InstanceType<typeof OpenAI.APIError>).error).toEqual({ message: 'Overloaded', type: 'overloaded_error', param: null, code: null });
  const id = await lastCallId();
  expect((await chargeOf(h, id)).capture).toBe(0n);
  const [task] = await h.db.dataSource.query(`SELECT model, status, request FROM tasks WHERE id = $1`, [id]);
  expect(task).toMatchObject({ model: HOUSE, status: 'failed', request: { endpoint: 'POST /v1/chat/completions' } });
});

it('an upstream dying mid-stream ends the chat stream with an error chunk the client raises, no [DONE]; what was relayed is charged', async () => {
  let text = '';
  const stream = client.chat.completions.stream({
    model: 'lumen-chat-1',
    max_tokens: 256,
    messages: [{ role: 'user', content: 'one two three four five six seven [sim:drop]' }],
  });
  stream.on('content', (d) => (text += d));
  const err = await stream.finalChatCompletion().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(OpenAI.APIError);
  expect(String((err as Error).message)).toContain('lost mid-stream');
  expect(text.length).toBeGreaterThan(0);
  const id = await lastCallId();
  expect((await chargeOf(h, id)).capture).toBeGreaterThan(0n);
  const [task] = await h.db.dataSource.query(`SELECT result FROM tasks WHERE id = $1`, [id]);
  expect(task.result).toMatchObject({ reason: 'upstream_lost' });
});
