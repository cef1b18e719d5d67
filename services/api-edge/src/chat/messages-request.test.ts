import { DomainError } from '@gmg/errors';
import { IMAGE_TOKEN_CEILING, PAGE_TOKEN_CEILING, PDF_MAX_PAGES, PROMPT_OVERHEAD_TOKENS, parseMessagesRequest } from './messages-request';

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

  it('bounds a document by its real size: a long PDF far above one image, a short one and a text one by their bytes, a URL one by the page limit', () => {
    const doc = (source: object) =>
      parseMessagesRequest(
        raw({
          ...base,
          messages: [
            {
              role: 'user',
              content: [
                { type: 'document', source },
                { type: 'text', text: 'sum up' },
              ],
            },
          ],
        }),
      );
    const pdf = (bytes: number) => doc({ type: 'base64', media_type: 'application/pdf', data: Buffer.alloc(bytes, 7).toString('base64') });
    const long = pdf(60_000);
    expect(long.documents).toBe(1);
    // 60 kB of PDF: up to 61 pages of image + text, not the one image it used to be counted as
    expect(long.inputBound).toBeGreaterThanOrEqual(61 * PAGE_TOKEN_CEILING);
    expect(pdf(10_000_000).inputBound).toBeLessThan(PDF_MAX_PAGES * PAGE_TOKEN_CEILING + PROMPT_OVERHEAD_TOKENS + 500);
    expect(pdf(500).inputBound).toBeLessThan(2 * PAGE_TOKEN_CEILING + PROMPT_OVERHEAD_TOKENS + 500);
    const text = 'a'.repeat(50_000);
    expect(doc({ type: 'text', media_type: 'text/plain', data: text }).inputBound).toBeGreaterThanOrEqual(50_000);
    expect(doc({ type: 'url', url: 'https://example.com/a.pdf' }).inputBound).toBeGreaterThanOrEqual(PDF_MAX_PAGES * PAGE_TOKEN_CEILING);
  });

  it('count_tokens bodies need no max_tokens', () => {
    const { max_tokens: _, ...noMax } = base;
    expect(parseMessagesRequest(raw(noMax), { countOnly: true }).model).toBe('lumen-chat-1');
    expect(fieldOf(() => parseMessagesRequest(raw(noMax)))).toBe('max_tokens');
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
