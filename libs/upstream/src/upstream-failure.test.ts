import { classifyHttpFailure, isModerationFailure, scrubSecret } from './upstream-failure';
import { mapUnifiedTask, parseAckTaskId } from './gateway.adapter';

describe('classifyHttpFailure', () => {
  const c = (f: Parameters<typeof classifyHttpFailure>[0]) => classifyHttpFailure(f, 'upstream x POST /v1/images/generations');

  it.each([
    [{ code: 'ECONNREFUSED' }, true, 'network'],
    [{ code: 'ECONNRESET' }, true, 'network'],
    [{ code: 'ECONNABORTED' }, true, 'timeout'],
    [{ code: 'ERR_CANCELED' }, true, 'timeout'],
    [{ status: 429 }, true, 'quota'],
    [{ status: 500 }, true, 'server'],
    [{ status: 502 }, true, 'server'],
    [{ status: 503, errorType: 'service_unavailable' }, true, 'server'],
    [{ status: 408 }, true, 'timeout'],
    [{ status: 401 }, true, 'channel'],
    [{ status: 402 }, true, 'channel'],
    [{ status: 403 }, true, 'channel'],
    [{ status: 400, errorType: 'invalid_request_error' }, false, 'bad_request'],
    [{ status: 422 }, false, 'bad_request'],
    [{ status: 404 }, false, 'not_found'],
    [{ status: 400, errorType: 'moderation', errorMessage: 'nope' }, false, 'moderation'],
    [{ status: 400, errorMessage: 'Banned prompt detected' }, false, 'moderation'],
    // OpenAI: the type is generic, the code says moderation
    [{ status: 400, errorType: 'invalid_request_error', errorCode: 'moderation_blocked', errorMessage: 'Your request was rejected' }, false, 'moderation'],
  ] as const)('%j → retryable %s, kind %s', (f, retryable, kind) => {
    const e = c(f);
    expect(e.retryable).toBe(retryable);
    expect(e.kind).toBe(kind);
  });

  it('names the call and the upstream message, truncated', () => {
    const e = c({ status: 400, errorType: 'invalid_request_error', errorMessage: 'x'.repeat(1000) });
    expect(e.message).toMatch(/^upstream x POST \/v1\/images\/generations answered HTTP 400 invalid_request_error: x+…$/);
    expect(e.message.length).toBeLessThan(420);
    expect(e.status).toBe(400);
  });
});

describe('isModerationFailure', () => {
  it('recognizes moderation by type or by message', () => {
    expect(isModerationFailure('moderation', 'whatever')).toBe(true);
    expect(isModerationFailure(undefined, 'Banned prompt detected')).toBe(true);
    expect(isModerationFailure(undefined, 'Content moderation rejected the image')).toBe(true);
    expect(isModerationFailure(undefined, 'Generation failed (simulated)')).toBe(false);
    expect(isModerationFailure('server_error', 'Task timeout')).toBe(false);
  });
});

describe('scrubSecret', () => {
  it('replaces every occurrence of the secret', () => {
    expect(scrubSecret('key sk-abcdef bad, sk-abcdef', 'sk-abcdef')).toBe('key [redacted] bad, [redacted]');
  });
  it('leaves text alone for an empty secret', () => {
    expect(scrubSecret('abc', '')).toBe('abc');
  });
});

describe('parseAckTaskId', () => {
  it('reads shape A', () => {
    expect(parseAckTaskId({ code: 200, data: [{ status: 'submitted', task_id: 'task_a' }] })).toBe('task_a');
  });
  it('reads shape B', () => {
    expect(parseAckTaskId({ code: 202, request_id: 'r', data: { id: 'task_b', object: 'generation.task', status: 'pending' } })).toBe('task_b');
  });
  it('reads shape C', () => {
    expect(parseAckTaskId({ code: 200, data: { id: 'task_c', object: 'motion.avatar.asset.task', status: 'processing' } })).toBe('task_c');
  });
  it('returns undefined for anything else', () => {
    expect(parseAckTaskId({ code: 200, data: [] })).toBeUndefined();
    expect(parseAckTaskId('<html>')).toBeUndefined();
    expect(parseAckTaskId({ data: { id: 5 } })).toBeUndefined();
  });
});

describe('mapUnifiedTask', () => {
  it('maps a processing task and clamps progress', () => {
    expect(mapUnifiedTask({ id: 't', status: 'processing', progress: 140 })).toEqual({ status: 'processing', progress: 100 });
    expect(mapUnifiedTask({ id: 't', status: 'pending' })).toEqual({ status: 'pending', progress: 0 });
  });

  it('maps a completed image task with its result', () => {
    const p = mapUnifiedTask({ id: 't', status: 'completed', progress: 100, result: { images: [{ url: 'http://u/1.jpg' }, { nope: 1 }] } });
    expect(p).toEqual({ status: 'completed', progress: 100, result: { images: [{ url: 'http://u/1.jpg' }] } });
  });

  it('maps video results, keeping url as an array', () => {
    const p = mapUnifiedTask({ status: 'completed', result: { videos: [{ url: ['http://u/v.mp4'], expires_at: 123 }] } });
    expect(p.result?.videos).toEqual([{ url: ['http://u/v.mp4'], expires_at: 123 }]);
  });

  it('maps a failed task, flagging moderation by type', () => {
    const p = mapUnifiedTask({ status: 'failed', error: { code: 'task_failed', message: 'Banned prompt detected', type: 'moderation' } });
    expect(p.error).toEqual({ message: 'Banned prompt detected', type: 'moderation', moderation: true });
  });

  it('maps a plain failure as not moderation and gives a default message', () => {
    expect(mapUnifiedTask({ status: 'failed', error: { code: 'task_failed', message: 'Generation failed (simulated)' } }).error).toEqual({
      message: 'Generation failed (simulated)',
      moderation: false,
    });
    expect(mapUnifiedTask({ status: 'failed' }).error?.message).toBe('Generation failed');
  });

  it('throws a retryable error for an unknown status', () => {
    expect(() => mapUnifiedTask({ status: 'weird' })).toThrow(expect.objectContaining({ retryable: true }));
  });
});
