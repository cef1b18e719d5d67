import Anthropic from '@anthropic-ai/sdk';
import { ChannelRepository, PriceRepository } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { waitFor } from '@gmg/testing';
import { SIM_KEY, chargeOf, chatCalls, nextCall, sdkFor, startEdgeHarness, startSim, type EdgeHarness, type SimHandle } from '../chat/chat.test-kit';

/**
 * The failure table of docs/messages.md, one row per test: a hung channel fails over within the header bound (and
 * its circuit then skips it), an upstream refusing our channel's key is the gateway's 502 (never the caller's
 * authentication_error), a stream cut mid-event reaches the client as whole events plus one error event (parsed by
 * the official SDK), and the vendor's other calls (count_tokens, models.list, unknown sub-paths).
 */
let h: EdgeHarness;
let healthy: SimHandle;
let hung: SimHandle;
let key: string;
let accountId: string;
let client: Anthropic;
let healthyChannelId: string;
/** The header bound under test (the old cost of a hung channel was 120 s). */
const HEADER_BOUND_MS = 2000;
/** The edge's warnings and errors, parsed, as it logs them (failovers among them). */
const edgeLog: Array<Record<string, unknown>> = [];
const edgeLogger = createLogger({ service: 'api-edge-test', level: 'warn', destination: { write: (line: string) => void edgeLog.push(JSON.parse(line)) } });

beforeAll(async () => {
  [h, healthy, hung] = await Promise.all([
    startEdgeHarness({
      env: {
        MESSAGES_CHANNEL_CACHE_TTL_MS: '0',
        PRICE_CACHE_TTL_MS: '0',
        MESSAGES_HEADERS_TIMEOUT_SECONDS: String(HEADER_BOUND_MS / 1000),
        MESSAGES_BREAKER_FAILURES: '1',
      },
      deps: { logger: edgeLogger },
    }),
    startSim(),
    startSim('hang'),
  ]);
  const channels = new ChannelRepository(h.db.dataSource);
  const groups = ['default'];
  ({ id: healthyChannelId } = await channels.create({
    name: 'healthy',
    protocol: 'messages',
    baseUrl: healthy.url,
    apiKey: SIM_KEY,
    models: ['lumen-chat-1', 'lumen-chat-1-mini'],
    groups,
    priority: 0,
  }));
  await channels.create({ name: 'hung', protocol: 'messages', baseUrl: hung.url, apiKey: SIM_KEY, models: ['lumen-chat-1-mini'], groups, priority: 10 });
  // our key is wrong on this one: the upstream answers 401 to the gateway
  await channels.create({
    name: 'bad-key',
    protocol: 'messages',
    baseUrl: healthy.url,
    apiKey: 'not-the-sim-key',
    models: ['lumen-omni-1'],
    groups,
    priority: 0,
  });
  ({ key, accountId } = await h.newCustomer({ balance: 50 }));
  client = sdkFor(h, key);
}, 60_000);
afterAll(async () => {
  await h?.background.creditLeases.close();
  await Promise.all([healthy?.proc.stop(), hung?.proc.stop()]);
  await h?.close();
});

let seen = 0;
const lastCall = async () => nextCall(h, accountId, seen++);
const hi = (content: string, model = 'lumen-chat-1-mini') => ({ model, max_tokens: 64, messages: [{ role: 'user' as const, content }] });

describe('hung channel', () => {
  /** Requests the hung upstream took (it logs each one it leaves hanging). */
  const hungRequests = () => hung.logLines().filter((l) => l.msg === 'messages call left hanging').length;
  /** The edge's failovers away from the hung channel. */
  const hungFailovers = () => edgeLog.filter((l) => l.channel === 'hung' && /trying the next channel/.test(String(l.msg)));

  it('a stream fails over when the header bound ends its wait; then its open circuit skips it: the next calls (streamed or not) never reach it', async () => {
    const first = await client.messages.stream(hi('are you there?')).finalMessage();
    expect(first.content).toEqual([{ type: 'text', text: 'Hello! You said: are you there?' }]);
    // the hung upstream took the request (the best channel goes first) and the edge gave up on it by its header
    // timeout (undici's, set to HEADER_BOUND_MS) before asking the healthy one: no other cause ends that wait
    expect(hungFailovers()).toEqual([expect.objectContaining({ err: expect.stringMatching(/headers timeout/i) })]);
    await waitFor(() => hungRequests() === 1, { timeoutMs: 5000, what: 'the hung upstream logged the request it took' });
    // the open circuit: neither later call is sent to the hung channel (no second failover, no second request there;
    // a non-streamed call would wait there for the whole answer timeout)
    for (const stream of [true, false]) {
      const m = stream ? await client.messages.stream(hi('again')).finalMessage() : await client.messages.create(hi('again'));
      expect(m.content).toEqual([{ type: 'text', text: 'Hello! You said: again' }]);
      expect(hungFailovers()).toHaveLength(1);
      expect(hungRequests()).toBe(1);
    }
    const costs = [await lastCall(), await lastCall(), await lastCall()];
    expect(costs.map((c) => c.status)).toEqual(['completed', 'completed', 'completed']);
    const answeredBy: Array<{ channel_id: string }> = await h.db.dataSource.query(`SELECT channel_id FROM tasks WHERE id = ANY($1)`, [costs.map((c) => c.id)]);
    expect(answeredBy.map((r) => r.channel_id)).toEqual([healthyChannelId, healthyChannelId, healthyChannelId]);
  });
});

describe('upstream 401 (our channel key)', () => {
  it('the client gets 502 bad_gateway in the vendor envelope with a request id, never authentication_error; nothing charged', async () => {
    const err = (await client.messages.create(hi('hello', 'lumen-omni-1')).catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.status).toBe(502);
    expect(err.error).toEqual({
      type: 'error',
      error: { code: 502, type: 'bad_gateway', message: expect.stringMatching(/channel credentials.*not about your API key/) },
    });
    expect(err.requestID).toMatch(/^req_/);
    expect((await chargeOf(h, (await lastCall()).id as string)).capture).toBe(0n);
  });
});

describe('mid-event cut', () => {
  it('whole events then one well-formed error event: the raw stream has no half event, and the official SDK parses it to the end', async () => {
    const res = await fetch(`${h.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ ...hi('cut me [sim:cut]', 'lumen-chat-1'), stream: true }),
    });
    const text = await res.text();
    expect(text.endsWith('\n\n')).toBe(true);
    const events = text
      .slice(0, -2)
      .split('\n\n')
      .map((block) => {
        const [ev, data, ...rest] = block.split('\n');
        expect(rest).toEqual([]);
        return { event: ev.replace(/^event: /, ''), data: JSON.parse(data.replace(/^data: /, '')) as { type: string } };
      });
    expect(events.map((e) => e.event).slice(0, 2)).toEqual(['message_start', 'ping']);
    for (const e of events) expect(e.data.type).toBe(e.event);
    expect(events.at(-1)).toEqual({
      event: 'error',
      data: { type: 'error', error: { code: 502, type: 'bad_gateway', message: 'The upstream connection was lost mid-stream' } },
    });
    expect(events.filter((e) => e.event === 'error')).toHaveLength(1);
    const call = await lastCall();
    expect(call.status).toBe('completed');
    expect((call.result as { charge_rule: string }).charge_rule).toBe('relayed_output');

    const seenBySdk: string[] = [];
    const stream = client.messages.stream(hi('cut me [sim:cut]', 'lumen-chat-1'));
    const err = await (async () => {
      for await (const e of stream) seenBySdk.push(e.type);
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(String((err as Error).message)).toContain('The upstream connection was lost mid-stream');
    expect(seenBySdk.slice(0, 2)).toEqual(['message_start', 'content_block_start']);
    await lastCall();
  });
});

describe('what vendor clients also call', () => {
  it('count_tokens is relayed to the channel (its own count), models.list lists the chat models, unknown sub-paths answer in the vendor envelope', async () => {
    const params = hi('count these words please', 'lumen-chat-1');
    const counted = await client.messages.countTokens({ model: params.model, messages: params.messages });
    const answered = await client.messages.create(params);
    expect(counted.input_tokens).toBe(answered.usage.input_tokens);
    await lastCall();

    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids).toEqual(expect.arrayContaining(['lumen-chat-1', 'lumen-chat-1-mini', 'lumen-omni-1']));
    expect(ids).not.toContain('lumen-2-pro');

    const res = await fetch(`${h.baseUrl}/v1/messages/batches`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      type: 'error',
      error: { code: 404, type: 'not_found_error', message: expect.stringContaining('/v1/messages/batches') },
    });
    // nothing of the above was charged but the one answer
    expect(await chatCalls(h, accountId)).toHaveLength(seen);
  });

  it("a custom model name on the key's list is callable when a messages channel lists it by name; not through a catch-all channel", async () => {
    const kinds = ['input', 'output', 'cache_write', 'cache_read'];
    await new PriceRepository(h.db.dataSource).upsertMany(
      ['house-chat', 'other-chat'].flatMap((m) => kinds.map((k) => ({ key: `${m}@${k}`, unitPrice: 1_000_000n, description: 'test' }))),
    );
    const custom = await h.newCustomer({ balance: 5, models: ['house-chat', 'other-chat'] });
    await new ChannelRepository(h.db.dataSource).create({
      name: 'house',
      protocol: 'messages',
      baseUrl: healthy.url,
      apiKey: SIM_KEY,
      models: ['house-chat'],
      groups: ['default'],
    });
    const sdk = sdkFor(h, custom.key);
    const msg = await sdk.messages.create(hi('hello house', 'house-chat'));
    expect(msg.content).toEqual([{ type: 'text', text: 'Hello! You said: hello house' }]);
    expect((await nextCall(h, custom.accountId, 0)).status).toBe('completed');
    // listed on the key, but no channel names it: 503, nothing charged
    const none = await sdk.messages.create(hi('hello', 'other-chat')).catch((e: unknown) => e);
    expect(none).toMatchObject({ status: 503, error: { error: { message: expect.stringContaining("No upstream channel serves model 'other-chat'") } } });
    // a name the key does not list stays a 400
    const unknown = await sdk.messages.create(hi('hello', 'nobody-chat')).catch((e: unknown) => e);
    expect((unknown as { status: number }).status).toBe(400);
  });

  it('count_tokens falls back to an estimate that says so when no channel counts', async () => {
    const res = await fetch(`${h.baseUrl}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'lumen-omni-1', messages: [{ role: 'user', content: 'x'.repeat(400) }] }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('gmg-token-count')).toBe('estimate');
    const body = (await res.json()) as { input_tokens: number; estimate: boolean };
    expect(body.estimate).toBe(true);
    expect(body.input_tokens).toBeGreaterThanOrEqual(100);
  });
});
