import {
  ArtgenNotFoundError,
  AuthenticationError,
  GatewayError,
  InternalError,
  InvalidDurationError,
  InvalidRequestError,
  NotFoundError,
  RateLimitError,
  ServerError,
  ServiceUnavailableError,
  errorFromResponse,
  paramOf,
  parseRetryAfter,
} from './errors';

const headers = (h: Record<string, string> = {}) => new Headers(h);

describe('errorFromResponse', () => {
  it('maps each spec type to its own class, all GatewayError', () => {
    const cases: Array<[number, string, new (...a: never[]) => GatewayError]> = [
      [400, 'invalid_request_error', InvalidRequestError],
      [400, 'invalid_duration', InvalidDurationError],
      [401, 'authentication_error', AuthenticationError],
      [404, 'not_found_error', NotFoundError],
      [404, 'not_found', ArtgenNotFoundError],
      [429, 'rate_limit_error', RateLimitError],
      [500, 'server_error', ServerError],
      [500, 'internal_error', InternalError],
      [503, 'service_unavailable', ServiceUnavailableError],
    ];
    for (const [status, type, Cls] of cases) {
      const e = errorFromResponse(status, { error: { code: status, type, message: 'm' } }, headers());
      expect({ type, cls: e.constructor.name, isBase: e instanceof GatewayError, status: e.status }).toEqual({ type, cls: Cls.name, isBase: true, status });
    }
    // the more specific spellings stay catchable by their family
    expect(errorFromResponse(400, { error: { type: 'invalid_duration', message: 'm' } }, headers())).toBeInstanceOf(InvalidRequestError);
    expect(errorFromResponse(404, { error: { type: 'not_found', message: 'm' } }, headers())).toBeInstanceOf(NotFoundError);
  });

  it('names the field: the body param, else the back-quoted name the message starts with', () => {
    expect(errorFromResponse(400, { error: { type: 'invalid_request_error', message: "`size` must be one of 1:1, 16:9; got 'x'" } }, headers()).param).toBe(
      'size',
    );
    expect(errorFromResponse(400, { error: { type: 'invalid_request_error', message: 'whatever', param: 'duration' } }, headers()).param).toBe('duration');
    expect(paramOf('Request body is not valid JSON')).toBeUndefined();
  });

  it('falls back on the status when the body is not the error shape, and reads Retry-After and X-Request-Id', () => {
    const e = errorFromResponse(429, undefined, headers({ 'retry-after': '3', 'x-request-id': 'req_1' }));
    expect(e).toBeInstanceOf(RateLimitError);
    expect(e).toMatchObject({ retryAfter: 3, requestId: 'req_1', message: 'HTTP 429' });
    expect(errorFromResponse(418, {}, headers())).toBeInstanceOf(InvalidRequestError);
    expect(errorFromResponse(504, {}, headers())).toBeInstanceOf(ServerError);
    expect(errorFromResponse(400, { error: { type: 'brand_new_type', message: 'm' } }, headers()).constructor).toBe(GatewayError);
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('2', now)).toBe(2);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
