import Anthropic from '@anthropic-ai/sdk';
import { ChannelRepository } from '@gmg/db';
import { freePort, waitFor } from '@gmg/testing';
import {
  SIM_KEY,
  balanceOf,
  chargeOf,
  chatCalls,
  expectedCost,
  nextCall,
  sdkFor,
  startFailoverWorld,
  type EdgeHarness,
  type SimHandle,
} from '../chat/chat.test-kit';

/**
 * Failover before the first byte, never after; a client abort closes the upstream request; an upstream dying
 * mid-stream; the errors the gateway answers itself, in the vendor's envelope, costing nothing.
 * Channels: healthy (lumen-chat-1, lumen-chat-1-mini), overloaded (529: mini and omni, higher priority), and a
 * dead address (mini, highest priority). All serve the `default` group only.
 */
let h: EdgeHarness;
let healthy: SimHandle;
let sick: SimHandle;
let key: string;
let accountId: string;
let client: Anthropic;

let close: () => Promise<void>;

beforeAll(async () => {
  ({ h, healthy, sick, close } = await startFailoverWorld(['lumen-chat-1-mini', 'lumen-omni-1']));
  const deadPort = await freePort();
  await new ChannelRepository(h.db.dataSource).create({
    name: 'dead',
    protocol: 'messages',
    baseUrl: `http://127.0.0.1:${deadPort}`,
    apiKey: SIM_KEY,
    models: ['lumen-chat-1-mini'],
    groups: ['default'],
    priority: 20,
  });
  ({ key, accountId } = await h.newCustomer({ balance: 50 }));
  client = sdkFor(h, key);
}, 60_000);
afterAll(async () => {
  await close?.();
});

const answered = (sim: SimHandle) => sim.logLines().filter((l) => l.msg === 'messages call answered');
const refused = (sim: SimHandle) => sim.logLines().filter((l) => l.msg === 'messages call refused');
let seen = 0;
/** The call the test just made (waits for its batch). */
const lastCallId = async () => (await nextCall(h, accountId, seen++)).id as string;

describe('failover before the first byte', () => {
  it.each([false, true])('dead channel, then 529, then a healthy one: one clean answer, charged once (stream: %s)', async (stream) => {
    const since = new Date().toISOString();
    const params = { model: 'lumen-chat-1-mini', max_tokens: 64, messages: [{ role: 'user' as const, content: 'fail over please' }] };
    const msg = stream ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
    expect(msg.content).toEqual([{ type: 'text', text: 'Hello! You said: fail over please' }]);
    await waitFor(() => refused(sick).some((l) => String(l.time) >= since), { timeoutMs: 3000, what: 'the 529 in the sick sim log' });
    expect(refused(sick).filter((l) => String(l.time) >= since)).toEqual([expect.objectContaining({ status: 529 })]);
    // the sims' logs reach this process asynchronously (buffered): wait for the healthy one's line as for the 529
    await waitFor(() => answered(healthy).some((l) => String(l.time) >= since), { timeoutMs: 3000, what: 'the answer in the healthy sim log' });
    expect(answered(healthy).filter((l) => String(l.time) >= since)).toEqual([expect.objectContaining({ id: msg.id, model: 'lumen-chat-1-mini' })]);
    const ledger = await chargeOf(h, await lastCallId());
    expect((await chatCalls(h, accountId)).length).toBe(seen);
    expect(ledger.capture).toBe(await expectedCost(h, 'lumen-chat-1-mini', { input: msg.usage.input_tokens, output: msg.usage.output_tokens }));
  });

  it('every channel refusing: the last refusal (529 overloaded) goes back as the upstream sent it, nothing charged', async () => {
    const err = await client.messages.create({ model: 'lumen-omni-1', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as { status: number }).status).toBe(529);
    expect((err as { error: unknown }).error).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    expect((await chargeOf(h, await lastCallId())).capture).toBe(0n);
  });
});

describe('streams cut short', () => {
  it('a client aborting a slow stream after its first delta closes the upstream request before its end; charged input + relayed output', async () => {
    let input = 0;
    let messageId = '';
    let received = '';
    const stream = client.messages.stream({ model: 'lumen-chat-1', max_tokens: 4096, messages: [{ role: 'user', content: 'take your time [sim:slow]' }] });
    stream.on('streamEvent', (e) => {
      if (e.type === 'message_start') [input, messageId] = [e.message.usage.input_tokens, e.message.id];
    });
    const aborted = new Promise<void>((resolve) =>
      stream.on('text', (t) => {
        received += t;
        stream.abort();
        resolve();
      }),
    );
    await stream.done().catch(() => undefined);
    await aborted;
    // the sim logs this only when the connection closes before its last event (the whole [sim:slow] stream is its
    // text said 200 times, a delta per word, 50 ms apart: it would end far past this wait's deadline)
    const closed = await waitFor(() => healthy.logLines().find((l) => l.msg === 'messages stream closed by the client before its end' && l.id === messageId), {
      what: 'the sim logging the close of this stream',
    });
    expect(closed.eventsSent).toBeGreaterThanOrEqual(4); // message_start, ping, content_block_start, the first delta
    const full = answered(healthy).at(-1)!.usage as { output_tokens: number };
    const id = await lastCallId();
    const ledger = await chargeOf(h, id);
    const [task] = await h.db.dataSource.query(`SELECT status, result FROM tasks WHERE id = $1`, [id]);
    expect(task.result).toMatchObject({ charge_rule: 'relayed_output', reason: 'client_closed', usage: { input_tokens: input } });
    const out = task.result.usage.output_tokens as number;
    expect(out).toBeGreaterThanOrEqual(Math.ceil(received.length / 4));
    expect(out).toBeLessThan(full.output_tokens);
    expect(ledger.capture).toBe(await expectedCost(h, 'lumen-chat-1', { input, output: out }));
    expect(ledger.capture).toBeLessThan(ledger.reserved);
  });

  it('an upstream dying mid-stream ends the client stream with an error event; no failover after the first byte', async () => {
    const since = new Date().toISOString();
    let text = '';
    const stream = client.messages.stream({
      model: 'lumen-chat-1',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'one two three four five six seven [sim:drop]' }],
    });
    stream.on('text', (t) => (text += t));
    const err = await stream.finalMessage().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(String((err as Error).message)).toContain('lost mid-stream');
    expect(text.length).toBeGreaterThan(0);
    expect(answered(healthy).filter((l) => String(l.time) >= since && (l.markers as string[]).includes('drop'))).toHaveLength(1);
    const ledger = await chargeOf(h, await lastCallId());
    expect(ledger.capture).toBeGreaterThan(0n);
  });
});

describe('errors the gateway answers itself: vendor envelope, nothing charged', () => {
  /** A raw call; a header set to undefined is left out. */
  const post = (body: unknown, headers: Record<string, string | undefined> = {}) =>
    fetch(`${h.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: Object.fromEntries(
        Object.entries({ 'content-type': 'application/json', 'x-api-key': key, 'msgproto-version': '2023-06-01', ...headers }).filter(
          (e): e is [string, string] => e[1] !== undefined,
        ),
      ),
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const ok = { model: 'lumen-chat-1', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };

  it.each([
    ['no version header', ok, { 'msgproto-version': undefined }, 400, 'invalid_request_error', 'msgproto-version'],
    ['a malformed version', ok, { 'msgproto-version': 'v1' }, 400, 'invalid_request_error', 'msgproto-version'],
    ['invalid JSON', '{"model":', {}, 400, 'invalid_request_error', 'JSON'],
    ['no max_tokens', { ...ok, max_tokens: undefined }, {}, 400, 'invalid_request_error', 'max_tokens'],
    ['an image model', { ...ok, model: 'lumen-2-pro' }, {}, 400, 'invalid_request_error', 'chat model'],
    ['an unknown key', ok, { 'x-api-key': 'sk-nope' }, 401, 'authentication_error', 'Invalid API key'],
    ['a text body', ok, { 'content-type': 'text/plain' }, 415, 'invalid_request_error', 'Content-Type'],
  ])('%s: %#', async (_what, body, headers, status, type, text) => {
    const before = await chatCalls(h, accountId);
    const res = await post(body, headers as Record<string, string | undefined>);
    expect(res.status).toBe(status);
    const json = (await res.json()) as { type: string; error: { code: number; type: string; message: string } };
    expect(json).toEqual({ type: 'error', error: { code: status, type, message: expect.stringContaining(text) } });
    expect(await chatCalls(h, accountId)).toEqual(before);
  });

  it('the Bearer header works too; a key without the model gets 403, an empty account 402, a group without channels 503; no call recorded', async () => {
    const limited = await h.newCustomer({ balance: 5, models: ['lumen-chat-1'] });
    const forbidden = await sdkFor(h, limited.key)
      .messages.create({ ...ok, model: 'lumen-chat-1-mini' } as never)
      .catch((e: unknown) => e);
    expect(forbidden).toBeInstanceOf(Anthropic.PermissionDeniedError);
    const poor = await h.newCustomer({ balance: 0 });
    const unpaid = await sdkFor(h, poor.key)
      .messages.create(ok as never)
      .catch((e: unknown) => e);
    expect((unpaid as { status: number }).status).toBe(402);
    expect((unpaid as { error: unknown }).error).toMatchObject({ type: 'error', error: { code: 402, type: 'payment_required' } });
    const lonely = await h.newCustomer({ balance: 5, groupName: 'no-channels' });
    const none = await sdkFor(h, lonely.key)
      .messages.create(ok as never)
      .catch((e: unknown) => e);
    expect((none as { status: number }).status).toBe(503);
    const bearer = await fetch(`${h.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${limited.key}`, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(ok),
    });
    expect(bearer.status).toBe(200);
    for (const c of [poor, lonely]) {
      expect(await chatCalls(h, c.accountId)).toEqual([]);
      expect(await balanceOf(h, c.accountId)).toMatchObject({ held: 0n, spent: 0n });
    }
    expect((await nextCall(h, limited.accountId, 0)).status).toBe('completed');
  });

  it('GET /v1/messages is 405 in the same envelope', async () => {
    const res = await fetch(`${h.baseUrl}/v1/messages`, { headers: { 'x-api-key': key } });
    expect(res.status).toBe(405);
    expect(await res.json()).toMatchObject({ type: 'error', error: { code: 405 } });
  });
});
