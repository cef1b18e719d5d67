import Anthropic from '@anthropic-ai/sdk';
import { chargeOf, nextCall, sdkFor, startChatWorld, type EdgeHarness } from '../chat/chat.test-kit';

/**
 * Bounded memory per call (docs/messages.md, "Timeouts and bounds"): a non-streamed answer above
 * MESSAGES_MAX_ANSWER_BYTES is dropped and answered 502 in the vendor envelope, charged 0; one SSE event above
 * MESSAGES_MAX_EVENT_BYTES held back (an incomplete event; a whole one passes in the chunk it came in) ends the stream with one well-formed `error` event. The sim answers
 * "Hello! You said: <text>" and streams the text word by word, so one long word is one large event.
 */
const CAP = 4096;
let h: EdgeHarness;
let key: string;
let accountId: string;
let client: Anthropic;
let seen = 0;

let close: (() => Promise<void>) | undefined;
beforeAll(async () => {
  ({ h, key, accountId, close } = await startChatWorld(['lumen-chat-1'], { MESSAGES_MAX_ANSWER_BYTES: String(CAP), MESSAGES_MAX_EVENT_BYTES: String(CAP) }));
  client = sdkFor(h, key);
}, 60_000);
afterAll(async () => {
  await close?.();
});

const ask = (text: string) => ({ model: 'lumen-chat-1', max_tokens: 4096, messages: [{ role: 'user' as const, content: text }] });

describe('answer and event caps', () => {
  it('a non-streamed answer over the cap is 502 bad_gateway in the vendor envelope, charged 0; one under it is relayed', async () => {
    const small = await client.messages.create(ask('short'));
    expect(small.content).toEqual([{ type: 'text', text: 'Hello! You said: short' }]);
    expect((await chargeOf(h, (await nextCall(h, accountId, seen++)).id as string)).capture).toBeGreaterThan(0n);

    const err = await client.messages.create(ask('y'.repeat(2 * CAP))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as { status: number }).status).toBe(502);
    expect((err as { error: unknown }).error).toEqual({
      type: 'error',
      error: { type: 'bad_gateway', code: 502, message: expect.stringContaining(`larger than this gateway relays (${CAP} bytes)`) },
    });
    expect((err as { requestID?: string }).requestID).toEqual(expect.any(String));
    expect((await chargeOf(h, (await nextCall(h, accountId, seen++)).id as string)).capture).toBe(0n);
  });

  it('a streamed event held back over the cap ends the stream with one well-formed error event after the whole events before it', async () => {
    const res = await fetch(`${h.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      // 200 KB in one event (the sim answers up to max_tokens × 4 characters): it spans several socket reads, so its start is held back past the cap
      body: JSON.stringify({ ...ask(`hi ${'z'.repeat(200_000)}`), max_tokens: 60_000, stream: true }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    const events = text.split('\n\n').filter((e) => e.trim() !== '');
    const names = events.map((e) => /^event: (.*)$/m.exec(e)?.[1]);
    expect(names[0]).toBe('message_start');
    expect(names).toContain('content_block_start');
    expect(names.at(-1)).toBe('error');
    expect(names.filter((n) => n === 'error')).toHaveLength(1);
    for (const e of events) expect(() => JSON.parse(/^data: (.*)$/m.exec(e)![1]!)).not.toThrow();
    expect(text).not.toContain('z'.repeat(CAP)); // the oversized event was never relayed, not even in part
    expect(JSON.parse(/^data: (.*)$/m.exec(events.at(-1)!)![1]!)).toEqual({
      type: 'error',
      error: { type: expect.any(String), code: 502, message: `An upstream event is larger than this gateway relays (${CAP} bytes)` },
    });
  });
});
