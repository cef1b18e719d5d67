import { UpstreamError } from '@gmg/errors';
import { mapBflResult } from './bfl.status';
import { decodeBflRef, encodeBflRef, refOfSubmitAnswer, trustedPollUrl } from './bfl.task-ref';

const ctx = { describe: 'test poll', young: false };

describe('bfl status words', () => {
  it('maps every documented word', () => {
    expect(mapBflResult({ status: 'Pending', progress: null }, ctx)).toEqual({ status: 'pending', progress: 0 });
    expect(mapBflResult({ status: 'Pending', progress: 0.42 }, ctx)).toEqual({ status: 'processing', progress: 42 });
    expect(mapBflResult({ status: 'Ready', result: { sample: 'https://delivery-eu1.bfl.ai/x.jpeg?sig=1' } }, ctx)).toEqual({
      status: 'completed',
      progress: 100,
      media: [{ kind: 'image', source: { url: 'https://delivery-eu1.bfl.ai/x.jpeg?sig=1' } }],
    });
    for (const word of ['Request Moderated', 'Content Moderated']) {
      expect(mapBflResult({ status: word }, ctx)).toMatchObject({ status: 'failed', error: { moderation: true } });
    }
    expect(mapBflResult({ status: 'Error', details: { internal: 'trace' } }, ctx)).toEqual({
      status: 'failed',
      progress: 0,
      error: { message: 'Generation failed' },
    });
    expect(mapBflResult({ status: 'Task not found' }, ctx)).toMatchObject({ status: 'failed', error: { type: 'upstream_error' } });
  });

  it('reads Task not found just after the submit as still pending', () => {
    expect(mapBflResult({ status: 'Task not found' }, { ...ctx, young: true })).toEqual({ status: 'pending', progress: 0 });
  });

  it('treats an unknown word as still running, and a percentage progress as one', () => {
    expect(mapBflResult({ status: 'Generating', progress: 55 }, ctx)).toEqual({ status: 'processing', progress: 55 });
  });

  it('retries an answer without a status, and a Ready without a usable link', () => {
    for (const body of [{}, 'oops', { status: 'Ready', result: null }, { status: 'Ready', result: { sample: 'ftp://x' } }]) {
      expect(() => mapBflResult(body, ctx)).toThrow(expect.objectContaining({ retryable: true }) as Error);
    }
  });
});

describe('bfl task reference', () => {
  it('round-trips the id, the returned polling_url and the submit time', () => {
    const ref = refOfSubmitAnswer({ id: 'abc', polling_url: 'https://api.eu2.bfl.ai/v1/get_result?id=abc', cost: 3 }, 1234, 'submit');
    expect(decodeBflRef(encodeBflRef(ref))).toEqual({ id: 'abc', pollingUrl: 'https://api.eu2.bfl.ai/v1/get_result?id=abc', submittedAt: 1234 });
  });

  it('refuses a submit answer without a polling_url as retryable (never constructs one)', () => {
    for (const body of [{ id: 'abc' }, { id: 'abc', polling_url: 'javascript:alert(1)' }, { polling_url: 'https://api.bfl.ai/v1/get_result?id=x' }, null]) {
      const e = (() => {
        try {
          refOfSubmitAnswer(body, 0, 'submit');
        } catch (err) {
          return err as UpstreamError;
        }
      })();
      expect(e).toBeInstanceOf(UpstreamError);
      expect(e?.retryable).toBe(true);
    }
  });

  it('sends the key only to the channel origin or https on a BFL domain', () => {
    const base = 'https://api.bfl.ai';
    expect(trustedPollUrl(base, 'https://api.eu2.bfl.ai/v1/get_result?id=1', 'p').host).toBe('api.eu2.bfl.ai');
    expect(trustedPollUrl('http://127.0.0.1:9/bfl', 'http://127.0.0.1:9/bfl/v1/get_result?id=1', 'p').port).toBe('9');
    for (const bad of [
      'https://evil.example.com/v1/get_result',
      'http://api.bfl.ai/v1/get_result',
      'https://bfl.ai.evil.com/x',
      'http://127.0.0.1:10/x',
      'nonsense',
    ]) {
      expect(() => trustedPollUrl(base, bad, 'p')).toThrow(expect.objectContaining({ retryable: false }) as Error);
    }
  });

  it('a stored id that is not a BFL reference is final', () => {
    expect(() => decodeBflRef('task_123')).toThrow(expect.objectContaining({ retryable: false, kind: 'not_found' }) as Error);
  });
});
