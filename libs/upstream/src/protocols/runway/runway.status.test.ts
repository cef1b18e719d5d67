import { mapRunwayTask } from './runway.status';

const d = 'test poll';
describe('runway status words', () => {
  it('maps every documented word', () => {
    expect(mapRunwayTask({ id: 't', status: 'PENDING' }, d)).toEqual({ status: 'pending', progress: 0 });
    expect(mapRunwayTask({ id: 't', status: 'THROTTLED' }, d)).toEqual({ status: 'pending', progress: 0 });
    expect(mapRunwayTask({ id: 't', status: 'RUNNING', progress: 0.42 }, d)).toEqual({ status: 'processing', progress: 42 });
    expect(mapRunwayTask({ id: 't', status: 'SUCCEEDED', output: ['https://dnznrvs05pmza.cloudfront.net/a.mp4?_jwt=x'] }, d)).toEqual({
      status: 'completed',
      progress: 100,
      media: [{ kind: 'video', source: { url: 'https://dnznrvs05pmza.cloudfront.net/a.mp4?_jwt=x' } }],
    });
    expect(mapRunwayTask({ status: 'FAILED', failure: 'internal detail', failureCode: 'INTERNAL.BAD_OUTPUT.CODE01' }, d)).toEqual({
      status: 'failed',
      progress: 0,
      error: { message: 'Generation failed' },
    });
    for (const code of ['SAFETY.INPUT.TEXT', 'SAFETY.OUTPUT.VIDEO']) {
      expect(mapRunwayTask({ status: 'FAILED', failure: 'x', failureCode: code }, d)).toMatchObject({ status: 'failed', error: { moderation: true } });
    }
    expect(mapRunwayTask({ status: 'CANCELLED' }, d)).toMatchObject({ status: 'failed', error: { type: 'upstream_error' } });
  });
  it('treats an unknown word as still running', () => {
    expect(mapRunwayTask({ status: 'ASSET_PROCESSING', progress: 0.5 }, d)).toEqual({ status: 'processing', progress: 50 });
  });
  it('retries an answer without a status, and a SUCCEEDED without usable links', () => {
    for (const body of [{}, 'oops', { status: 'SUCCEEDED', output: [] }, { status: 'SUCCEEDED', output: ['ftp://x'] }, { status: 'SUCCEEDED' }]) {
      expect(() => mapRunwayTask(body, d)).toThrow(expect.objectContaining({ retryable: true }) as Error);
    }
  });
});
