import { DomainError } from '@gmg/errors';
import { IMAGE_TOKEN_CEILING, PROMPT_OVERHEAD_TOKENS, parseMessagesRequest } from './messages-request';

const raw = (v: unknown) => Buffer.from(JSON.stringify(v));
const base = { model: 'lumen-chat-1', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] };

const fieldOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    if (e instanceof DomainError) return String(e.details.field);
    throw e;
  }
  return undefined;
};

describe('parseMessagesRequest', () => {
  it('reads model, max_tokens and stream; bounds the input by the body bytes plus the overhead', () => {
    const r = parseMessagesRequest(raw({ ...base, stream: true }));
    expect(r).toMatchObject({ model: 'lumen-chat-1', maxTokens: 64, stream: true, images: 0 });
    expect(r.inputBound).toBe(Buffer.byteLength(JSON.stringify({ ...base, stream: true })) + PROMPT_OVERHEAD_TOKENS);
  });

  it('counts an image by the ceiling, not by its base64 size', () => {
    const img = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'A'.repeat(100_000) } };
    const r = parseMessagesRequest(raw({ ...base, messages: [{ role: 'user', content: [img, { type: 'text', text: 'what is it?' }] }] }));
    expect(r.images).toBe(1);
    expect(r.inputBound).toBeLessThan(IMAGE_TOKEN_CEILING + PROMPT_OVERHEAD_TOKENS + 500);
  });

  it.each([
    [{ ...base, model: undefined }, 'model'],
    [{ ...base, max_tokens: 0 }, 'max_tokens'],
    [{ ...base, max_tokens: 1.5 }, 'max_tokens'],
    [{ ...base, messages: [] }, 'messages'],
    [{ ...base, messages: [{ role: 'system', content: 'x' }] }, 'messages[0].role'],
    [{ ...base, messages: [{ role: 'user', content: 3 }] }, 'messages[0].content'],
    [{ ...base, stream: 'yes' }, 'stream'],
  ])('rejects %j naming %s', (body, field) => {
    expect(fieldOf(() => parseMessagesRequest(raw(body)))).toBe(field);
  });

  it('rejects invalid JSON as invalid_json', () => {
    expect(() => parseMessagesRequest(Buffer.from('{"model":'))).toThrow(expect.objectContaining({ code: 'invalid_json' }));
  });
});
