import { tokenCost, type TokenPrices } from '@gmg/contracts';
import { CHARS_PER_TOKEN, liveCostOf } from './messages-charge';
import type { MessagesRequest } from '../chat/messages-request';
import { SseUsageTracker } from './sse-usage.tracker';

/** The journalled live cost of a running stream (what a crash of the edge charges), for both upstream protocols. */
const prices: TokenPrices = { input: 3_000_000n, output: 15_000_000n, cache_write: 3_750_000n, cache_read: 300_000n };
const req: MessagesRequest = { model: 'm', maxTokens: 256, stream: true, images: 0, documents: 0, textBytes: 40, inputBound: 1040 };
const chunk = (delta: object) => Buffer.from(`data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta }] })}\n\n`);

describe('liveCostOf', () => {
  it('nothing relayed yet: 0', () => {
    const t = new SseUsageTracker();
    t.push(chunk({ role: 'assistant', content: '' }));
    expect(liveCostOf(t, req, prices, 1)).toBe(0n);
  });

  it('a chat-completions stream with output relayed and no usage yet: the input bound and the output so far, as a cut stream', () => {
    const t = new SseUsageTracker();
    t.push(chunk({ content: 'Hello there, friend' }));
    const expected = tokenCost({ inputTokens: req.inputBound, outputTokens: Math.ceil(19 / CHARS_PER_TOKEN), cacheWriteTokens: 0, cacheReadTokens: 0 }, prices);
    expect(expected).toBeGreaterThan(0n);
    expect(liveCostOf(t, req, prices, 1)).toBe(expected);
  });

  it('a messages stream: the input of message_start and the output so far', () => {
    const t = new SseUsageTracker();
    const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    t.push(
      Buffer.from(
        ev('message_start', { message: { usage: { input_tokens: 12, output_tokens: 1 } } }) +
          ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'abcdefgh' } }),
      ),
    );
    expect(liveCostOf(t, req, prices, 1)).toBe(tokenCost({ inputTokens: 12, outputTokens: 2, cacheWriteTokens: 0, cacheReadTokens: 0 }, prices));
  });
});
