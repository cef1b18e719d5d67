import { isDomainError } from '@gmg/errors';
import { DEFAULT_RESPONSE_VERSION, parseResponseVersion } from './response-version';

describe('parseResponseVersion', () => {
  it('defaults when the header is absent or blank', () => {
    expect(parseResponseVersion(undefined)).toBe(DEFAULT_RESPONSE_VERSION);
    expect(parseResponseVersion('  ')).toBe(DEFAULT_RESPONSE_VERSION);
  });

  it('accepts a calendar date and returns it for the echo header', () => {
    expect(parseResponseVersion('2026-07-27')).toBe('2026-07-27');
    expect(parseResponseVersion(' 2025-01-31 ')).toBe('2025-01-31');
  });

  it.each(['2026-02-30', '2026-13-01', '26-07-27', 'latest', '2026-07-27T00:00:00Z'])('rejects %s with an invalid_request error naming the header', (v) => {
    try {
      parseResponseVersion(v);
      throw new Error('accepted');
    } catch (e) {
      expect(isDomainError(e) && e.code === 'invalid_request' && e.details.field === 'X-Service-Response-Version').toBe(true);
    }
  });
});
