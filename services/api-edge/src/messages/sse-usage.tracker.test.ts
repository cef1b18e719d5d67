import { SseFramer } from './sse-framer';
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
  it('framed from any chunking (one byte at a time, multi-byte characters and CRLF blank lines split): only whole events pass, usage and output read', () => {
    for (const text of [STREAM, STREAM.replace(/\n/g, '\r\n')]) {
      for (const size of [1, 2, 3, 7, 64, 10_000]) {
        const framer = new SseFramer(1 << 16);
        const t = new SseUsageTracker();
        const bytes = Buffer.from(text);
        const out: Buffer[] = [];
        for (let i = 0; i < bytes.length; i += size) {
          const whole = framer.push(bytes.subarray(i, i + size));
          if (whole) {
            // every relayed piece ends on an event boundary
            expect(whole.toString('utf8')).toMatch(/\r?\n\r?\n$/);
            out.push(whole);
            t.push(whole);
          }
        }
        expect(Buffer.concat(out).toString('utf8')).toBe(text);
        expect(framer.pending).toBe(0);
        expect(t.usage).toEqual({ inputTokens: 25, outputTokens: 15, cacheWriteTokens: 3, cacheReadTokens: 4 });
        expect(t.finalUsage).toBe(true);
        expect(t.stopped).toBe(true);
        expect(t.relayedOutputChars).toBe('Hé llo'.length + '{"a":'.length);
      }
    }
  });

  it('holds back a half event, and refuses one growing past the bound', () => {
    const framer = new SseFramer(100);
    const cut = STREAM.indexOf('"text_delta"');
    expect(framer.push(Buffer.from(STREAM.slice(0, cut)))?.toString()).toBe(STREAM.slice(0, STREAM.indexOf('event: content_block_delta')));
    expect(framer.pending).toBeGreaterThan(0);
    expect(() => framer.push(Buffer.alloc(200, 'x'))).toThrow(/exceeds 100 bytes/);
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

  it('a chat-completions stream (an openai channel): its pieces counted, the usage chunk read (cached tokens apart), [DONE] ends it', () => {
    const chunk = (c: object) => `data: ${JSON.stringify({ object: 'chat.completion.chunk', ...c })}\n\n`;
    const t = new SseUsageTracker();
    t.push(Buffer.from(chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Hé ' } }], usage: null })));
    t.push(Buffer.from(chunk({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] } }] })));
    expect(t.relayedOutputChars).toBe(3 + 7);
    expect(t.finalUsage).toBe(false);
    expect(t.stopped).toBe(false);
    t.push(
      Buffer.from(
        chunk({ choices: [], usage: { prompt_tokens: 30, completion_tokens: 12, prompt_tokens_details: { cached_tokens: 8 } } }) + 'data: [DONE]\n\n',
      ),
    );
    expect(t.usage).toEqual({ inputTokens: 22, cacheReadTokens: 8, outputTokens: 12 });
    expect(t.finalUsage).toBe(true);
    expect(t.stopped).toBe(true);
  });

  it('a whole chat completion: its usage', () => {
    const t = new SseUsageTracker();
    t.readMessage({ object: 'chat.completion', usage: { prompt_tokens: 9, completion_tokens: 2 } });
    expect(t.usage).toEqual({ inputTokens: 9, cacheReadTokens: 0, outputTokens: 2 });
    expect(t.finalUsage).toBe(true);
  });

  it('a compatible server that leaves out `object`: its choices still read as chat completions', () => {
    const t = new SseUsageTracker();
    t.push(
      Buffer.from(
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'abcd' } }] })}\n\ndata: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 1 } })}\n\ndata: [DONE]\n\n`,
      ),
    );
    expect(t.relayedOutputChars).toBe(4);
    expect(t.usage).toEqual({ inputTokens: 5, cacheReadTokens: 0, outputTokens: 1 });
    expect(t.stopped).toBe(true);
    const w = new SseUsageTracker();
    w.readMessage({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 2 } });
    expect(w.usage).toEqual({ inputTokens: 7, cacheReadTokens: 0, outputTokens: 2 });
  });
});
