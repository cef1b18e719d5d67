import type { NormalizedRequest } from '@gmg/contracts';
import type { TaskRecord } from '@gmg/db';
import { DomainError } from '@gmg/errors';

export const EXTENDABLE_MODEL = 'pixel-v6';
export const EXTEND_FIELD = 'extend_from_task_id';

export interface ExtendSourceDeps {
  tasks: { get(id: string): Promise<TaskRecord | null> };
}

/**
 * The task id a request extends, if any: only in extension mode. When an earlier mode wins (spec 4.7.1: first
 * match wins) the contract drops the field from the upstream body, so there is nothing to check.
 */
export function extendSourceIdOf(request: NormalizedRequest): string | undefined {
  if (request.model !== EXTENDABLE_MODEL) return undefined;
  const id = request.derived.extendFromTaskId;
  return typeof id === 'string' ? id : undefined;
}

const refuse = (message: string): DomainError =>
  new DomainError('invalid_request', `\`${EXTEND_FIELD}\`: ${message}`, { field: EXTEND_FIELD, rule: 'server:extension-ownership' });

/**
 * Spec 4.7.1 `extend_from_task_id`: only a `completed` pixel-v6 task of the caller's account. Call it before the
 * price hold: a refusal costs nothing. A task of another account is answered exactly like a missing one, so
 * the check cannot be used to probe for task ids. Returns the source task (or undefined when the request
 * extends nothing).
 */
export async function checkExtendSource(deps: ExtendSourceDeps, accountId: string, request: NormalizedRequest): Promise<TaskRecord | undefined> {
  const id = extendSourceIdOf(request);
  if (id === undefined) return undefined;
  const source = await deps.tasks.get(id);
  if (!source || source.accountId !== accountId) {
    throw refuse(`task '${id}' was not found; it must name a completed pixel-v6 task of this account`);
  }
  if (source.model !== EXTENDABLE_MODEL) {
    throw refuse(`task '${id}' is a ${source.model} task; only a completed pixel-v6 task can be extended`);
  }
  if (source.status !== 'completed') {
    throw refuse(`task '${id}' is ${source.status}; only a completed pixel-v6 task can be extended`);
  }
  return source;
}
