import { UpstreamError } from '@gmg/errors';
import { checkOperationName, keyedVideoSource, mapOperation, normalizeGoogleAnswer, operationNameOf, readGoogleError } from './gemini.operation';

const ctx = { describe: 'test poll', baseUrl: 'https://generativelanguage.googleapis.com', downloadHeaders: { 'x-goog-api-key': 'k' } };
const NAME = 'models/veo-3.1-fast-generate-preview/operations/abc123';
const URI = 'https://generativelanguage.googleapis.com/v1beta/files/abc:download?alt=media';

describe('gemini operations', () => {
  it('reads running, done with videos, done with an error, and RAI-filtered', () => {
    expect(mapOperation({ name: NAME }, ctx)).toEqual({ status: 'processing', progress: 0 });
    expect(mapOperation({ name: NAME, done: false, metadata: {} }, ctx)).toEqual({ status: 'processing', progress: 0 });
    const response = { generateVideoResponse: { generatedSamples: [{ video: { uri: URI } }, { video: { uri: URI.replace('abc', 'def') } }] } };
    expect(mapOperation({ name: NAME, done: true, response }, ctx)).toEqual({
      status: 'completed',
      progress: 100,
      media: [
        { kind: 'video', source: { url: URI, headers: { 'x-goog-api-key': 'k' } } },
        { kind: 'video', source: { url: URI.replace('abc', 'def'), headers: { 'x-goog-api-key': 'k' } } },
      ],
    });
    expect(mapOperation({ name: NAME, done: true, error: { code: 13, message: 'Internal error' } }, ctx)).toEqual({
      status: 'failed',
      progress: 0,
      error: { message: 'Internal error', moderation: false },
    });
    const rai = { generateVideoResponse: { raiMediaFilteredCount: 1, raiMediaFilteredReasons: ['unsafe'] } };
    expect(mapOperation({ name: NAME, done: true, response: rai }, ctx)).toMatchObject({
      status: 'failed',
      error: { moderation: true, message: expect.stringContaining('unsafe') as string },
    });
    const refusedPrompt = { code: 3, message: "Your prompt couldn't be submitted because it might violate our usage guidelines." };
    expect(mapOperation({ name: NAME, done: true, error: refusedPrompt }, ctx).error?.moderation).toBe(true);
  });

  it('retries an answer that is no operation, or done without a video', () => {
    for (const body of ['oops', null, { name: NAME, done: true, response: {} }]) {
      expect(() => mapOperation(body, ctx)).toThrow(expect.objectContaining({ retryable: true }) as Error);
    }
  });

  it('sends the key only to the channel origin or https on googleapis.com', () => {
    expect(keyedVideoSource('http://127.0.0.1:9/gemini', 'http://127.0.0.1:9/gemini/v1beta/files/a:download?alt=media', {}, 'p')).toHaveProperty('url');
    for (const bad of ['https://evil.example.com/x', 'http://generativelanguage.googleapis.com/x', 'https://googleapis.com.evil.io/x', 'nonsense']) {
      expect(() => keyedVideoSource(ctx.baseUrl, bad, {}, 'p')).toThrow(expect.objectContaining({ retryable: false }) as Error);
    }
  });

  it('takes only operation names as ids (they become a path)', () => {
    expect(operationNameOf({ name: NAME }, 'submit')).toBe(NAME);
    expect(checkOperationName('operations/xyz')).toBe('operations/xyz');
    for (const bad of ['models/x/operations/../../files', 'models/x/operations/a?key=1', 'operations/..', 'models/../operations/a', 'task_1', '']) {
      expect(() => checkOperationName(bad)).toThrow(UpstreamError);
      expect(() => operationNameOf({ name: bad }, 'submit')).toThrow(expect.objectContaining({ retryable: false }) as Error);
    }
  });

  it("reads Google's error shape: a bad key is the channel's fault, RetryInfo stands in for Retry-After", () => {
    const badKey = { error: { code: 400, message: 'API key not valid.', status: 'INVALID_ARGUMENT', details: [{ reason: 'API_KEY_INVALID' }] } };
    expect(normalizeGoogleAnswer({ status: 400, data: badKey }).status).toBe(401);
    expect(readGoogleError(badKey)).toEqual({ type: 'INVALID_ARGUMENT', code: 'API_KEY_INVALID', message: 'API key not valid.' });
    const quota = { error: { code: 429, status: 'RESOURCE_EXHAUSTED', details: [{ retryDelay: '6.5s' }] } };
    expect(normalizeGoogleAnswer({ status: 429, data: quota }).retryAfter).toBe('7');
    expect(normalizeGoogleAnswer({ status: 429, data: quota, retryAfter: '2' }).retryAfter).toBe('2');
    expect(normalizeGoogleAnswer({ status: 400, data: { error: { code: 400, status: 'INVALID_ARGUMENT' } } }).status).toBe(400);
  });
});
