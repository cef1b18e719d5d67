import type { TaskJobCatalog } from '@gmg/contracts';
import type { Redis } from './connection';
import { createTypedWorker, requireTaskId, TASK_JOB_NAMES, BILLING_JOB_NAMES, type JobHandlers } from './typed-worker';

describe('typed worker', () => {
  it('lists every job name of the catalogs', () => {
    expect([...TASK_JOB_NAMES].sort()).toEqual(['sweep', 'task']);
    expect([...BILLING_JOB_NAMES].sort()).toEqual(['settle', 'sweep']);
  });

  it('refuses to start with a handler missing, before touching Redis', () => {
    const incomplete = { task: async () => undefined } as unknown as JobHandlers<TaskJobCatalog>;
    expect(() => createTypedWorker<TaskJobCatalog>('q', incomplete, TASK_JOB_NAMES, { connection: {} as Redis, prefix: 'p', concurrency: 1 })).toThrow(
      'no handler for job(s) sweep',
    );
  });

  it('accepts a job payload with a task id and rejects one without', () => {
    expect(requireTaskId({ taskId: 'task_abc' })).toBe('task_abc');
    expect(() => requireTaskId({})).toThrow('no valid taskId');
    expect(() => requireTaskId(null)).toThrow('no valid taskId');
  });
});
