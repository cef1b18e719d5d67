import { SseUsageTracker } from './sse-usage.tracker';

const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const STREAM =
  ev('message_start', { message: { usage: { input_tokens: 25, output_tokens: 1, cache_creation_input_tokens: 3, cache_read_input_tokens: 4 } } }) +
  ev('ping', {}) +
  ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hé llo' } }) +
  ev('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"a":' } }) +
  ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 15 } }) +
  ev('message_stop', {});

describe('SseUsageTracker', () => {
  it('reads usage and relayed output from any chunking, even one byte at a time (multi-byte characters split)', () => {
    for (const size of [1, 7, 64, 10_000]) {
      const t = new SseUsageTracker();
      const bytes = Buffer.from(STREAM);
      for (let i = 0; i < bytes.length; i += size) t.push(bytes.subarray(i, i + size));
      expect(t.usage).toEqual({ inputTokens: 25, outputTokens: 15, cacheWriteTokens: 3, cacheReadTokens: 4 });
      expect(t.finalUsage).toBe(true);
      expect(t.stopped).toBe(true);
      expect(t.relayedOutputChars).toBe('Hé llo'.length + '{"a":'.length);
    }
  });

  it('a stream cut before message_delta has no final usage', () => {
    const t = new SseUsageTracker();
    t.push(Buffer.from(STREAM.slice(0, STREAM.indexOf('event: message_delta'))));
    expect(t.finalUsage).toBe(false);
    expect(t.usage.outputTokens).toBe(1);
  });

  it('takes usage from a whole message', () => {
    const t = new SseUsageTracker();
    t.readMessage({ usage: { input_tokens: 9, output_tokens: 2 } });
    expect(t.usage).toEqual({ inputTokens: 9, outputTokens: 2 });
    expect(t.finalUsage).toBe(true);
  });
});
