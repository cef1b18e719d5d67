import { mapPrediction } from './replicate.prediction';

describe('mapPrediction (Replicate status words → ours)', () => {
  it('reads progress from the last percentage in logs, else 50 while processing', () => {
    expect(mapPrediction({ status: 'processing', logs: ' 10%|#  | 3/30\n 45%|####  | 14/30' })).toEqual({ status: 'processing', progress: 45 });
    expect(mapPrediction({ status: 'processing', logs: 'loading weights' })).toEqual({ status: 'processing', progress: 50 });
    expect(mapPrediction({ status: 'starting' })).toEqual({ status: 'pending', progress: 0 });
  });

  it('treats an unknown word as still running (the step deadline bounds it), never as a failure', () => {
    expect(mapPrediction({ status: 'queued_somewhere_new' })).toMatchObject({ status: 'processing' });
    expect(mapPrediction({})).toMatchObject({ status: 'processing' });
  });

  it('keeps every output URL as media, of the kind of the task pool (or the file extension without one)', () => {
    const one = mapPrediction({ status: 'succeeded', output: 'https://replicate.delivery/a/out.webp' }, { pool: 'image' });
    expect(one).toEqual({ status: 'completed', progress: 100, media: [{ kind: 'image', source: { url: 'https://replicate.delivery/a/out.webp' } }] });
    const list = mapPrediction({ status: 'succeeded', output: ['https://replicate.delivery/a/0.jpg', 'https://replicate.delivery/a/1.jpg'] });
    expect(list.media).toHaveLength(2);
    expect(mapPrediction({ status: 'succeeded', output: 'https://replicate.delivery/v/out.mp4' }).media?.[0]?.kind).toBe('video');
    expect(mapPrediction({ status: 'succeeded', output: 'https://replicate.delivery/v/x' }, { pool: 'video' }).media?.[0]?.kind).toBe('video');
  });

  it('fails a succeeded prediction without files, a failed one (moderation when flagged), canceled and aborted', () => {
    expect(mapPrediction({ status: 'succeeded', output: null, data_removed: true })).toMatchObject({
      status: 'failed',
      error: { message: expect.stringContaining('removed') },
    });
    expect(mapPrediction({ status: 'failed', error: 'CUDA out of memory' })).toMatchObject({
      status: 'failed',
      error: { message: 'CUDA out of memory', moderation: false },
    });
    expect(mapPrediction({ status: 'failed', error: 'NSFW content detected. Try running it again, or try a different prompt.' }).error?.moderation).toBe(true);
    expect(mapPrediction({ status: 'failed', error: 'The input or output was flagged as sensitive. (E005)' }).error?.moderation).toBe(true);
    expect(mapPrediction({ status: 'canceled' })).toMatchObject({ status: 'failed', error: { type: 'cancelled' } });
    expect(mapPrediction({ status: 'aborted' })).toMatchObject({ status: 'failed', error: { message: expect.stringContaining('aborted') } });
  });
});
