import type { NormalizedRequest } from '@gmg/contracts';
import type { TaskRecord } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import { pinToSourceTask } from './pin-to-source';

const request = (): NormalizedRequest => ({
  model: 'pixel-v6',
  requestedModel: 'pixel-v6',
  pool: 'video',
  upstreamBody: { prompt: 'go on', extend_from_task_id: 'task_ours' },
  derived: {},
  billing: [],
  expected: { kind: 'videos', count: 1 },
});
const source = (over: Partial<TaskRecord>): TaskRecord => ({ id: 'task_ours', upstreamTaskId: 'up_42', channelId: 'ch_1', ...over }) as TaskRecord;

describe('pinToSourceTask', () => {
  it('rewrites the reference to the upstream id and pins the source channel, leaving the input untouched', () => {
    const req = request();
    const pinned = pinToSourceTask(req, 'extend_from_task_id', source({}));
    expect(pinned.upstreamBody).toEqual({ prompt: 'go on', extend_from_task_id: 'up_42' });
    expect(pinned.pinnedChannelId).toBe('ch_1');
    expect(req.upstreamBody.extend_from_task_id).toBe('task_ours');
    expect(req.pinnedChannelId).toBeUndefined();
  });

  it('refuses a source that never reached an upstream with a 400 naming the field', () => {
    let err: unknown;
    try {
      pinToSourceTask(request(), 'extend_from_task_id', source({ upstreamTaskId: null, channelId: null }));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).details).toMatchObject({ field: 'extend_from_task_id', rule: 'server:source-state' });
  });
});
