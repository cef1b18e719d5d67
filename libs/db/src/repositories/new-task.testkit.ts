import type { NormalizedRequest } from '@gmg/contracts';
import { newTaskId } from '../ids';
import type { NewTask } from './task.repository';

/**
 * A task to hold in repository tests: a lumen-2-pro image task of `owner` at `price`, a minute to its deadline, a
 * fresh id; `extra` overrides any field.
 */
export function testTask(owner: { accountId: string; apiKeyId: string }, price: bigint, extra: Partial<NewTask> = {}): NewTask {
  return {
    id: newTaskId(),
    accountId: owner.accountId,
    apiKeyId: owner.apiKeyId,
    model: 'lumen-2-pro',
    requestedModel: 'lumen-2-pro',
    pool: 'image',
    request: { model: 'lumen-2-pro' } as unknown as NormalizedRequest,
    price,
    priceSnapshot: {},
    deadlineAt: new Date(Date.now() + 60_000),
    ...extra,
  };
}
