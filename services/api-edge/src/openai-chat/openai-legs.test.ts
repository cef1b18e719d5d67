import { withoutUsageChunk } from './openai-legs';

/** The usage chunk the gateway asked for on a client's behalf, removed from a batch of whole events however the server writes JSON and blank lines. */
describe('withoutUsageChunk', () => {
  const content = (sep: string, colon: string) =>
    `data: {"object":"chat.completion.chunk","choices"${colon}[{"index":0,"delta":{"content":"Hi"}}],"usage"${colon}null}${sep}`;
  const usage = (sep: string, colon: string) =>
    `data: {"object":"chat.completion.chunk","choices"${colon}[],"usage"${colon}{"prompt_tokens":3,"completion_tokens":1}}${sep}`;
  it.each([
    ['\n\n', ':'],
    ['\r\n\r\n', ':'],
    ['\n\n', ': '],
  ])('separator %j, colon %j: only the usage chunk goes', (sep, colon) => {
    const batch = content(sep, colon) + usage(sep, colon) + `data: [DONE]${sep}`;
    expect(withoutUsageChunk(Buffer.from(batch)).toString()).toBe(content(sep, colon) + `data: [DONE]${sep}`);
  });

  it('a choice-less chunk without usage (a prompt filter result) stays', () => {
    const filter = 'data: {"object":"chat.completion.chunk","choices":[],"prompt_filter_results":[]}\n\n';
    expect(withoutUsageChunk(Buffer.from(filter)).toString()).toBe(filter);
  });
});
