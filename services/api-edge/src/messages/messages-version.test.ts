import { DomainError } from '@gmg/errors';
import { parseMessagesVersion } from './messages-version';

describe('parseMessagesVersion', () => {
  it('takes msgproto-version, or anthropic-version as an alias', () => {
    expect(parseMessagesVersion({ 'msgproto-version': '2023-06-01' })).toBe('2023-06-01');
    expect(parseMessagesVersion({ 'anthropic-version': '2024-02-29' })).toBe('2024-02-29');
  });

  it.each([
    [{}, 'msgproto-version'],
    [{ 'msgproto-version': 'latest' }, 'msgproto-version'],
    [{ 'anthropic-version': '2023-02-30' }, 'anthropic-version'],
    [{ 'msgproto-version': '2023-6-1' }, 'msgproto-version'],
  ])('rejects %j with a 400 naming %s', (headers, name) => {
    let err: unknown;
    try {
      parseMessagesVersion(headers);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('invalid_request');
    expect((err as DomainError).message).toContain(name);
  });
});
