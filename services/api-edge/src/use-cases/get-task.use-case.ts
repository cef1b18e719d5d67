import type { TaskView, UnifiedTask } from '@gmg/contracts';
import type { TaskRecord } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';

export interface GetTaskDeps {
  views: { read(id: string): Promise<TaskView | null>; write(t: TaskRecord, opts?: { ifAbsent?: boolean }): Promise<TaskView> };
  tasks: { get(id: string): Promise<TaskRecord | null> };
  toUnifiedTask(t: TaskRecord): UnifiedTask;
  logger: Logger;
}

/** Task ids are `task_` + base62; anything else cannot exist, so it skips both stores. */
const TASK_ID = /^task_[0-9A-Za-z]{1,64}$/;

/** One message and one error for "missing" and "someone else's": the answer must not reveal which. */
const notFound = (id: string) => new DomainError('task_not_found', `Task ${id} not found`);

/**
 * The unified task of the caller's account: the Redis view first (written at every change), Postgres when the
 * view is missing (then the view is re-warmed). A task of another account answers exactly like a missing one,
 * and takes the same path: a foreign view hit still goes through the Postgres lookup before answering 404.
 */
export async function getTask(deps: GetTaskDeps, accountId: string, id: string): Promise<UnifiedTask> {
  if (!TASK_ID.test(id)) throw notFound(id);
  const view = await deps.views.read(id).catch((err: unknown) => {
    deps.logger.warn({ err, taskId: id }, 'task view read failed; falling back to Postgres');
    return null;
  });
  if (view && view.accountId === accountId) return view.task;

  const row = await deps.tasks.get(id);
  if (!row || row.accountId !== accountId) throw notFound(id);
  const task = deps.toUnifiedTask(row);
  if (!view) {
    // ifAbsent: a worker may have written a newer view since `row` was read; the re-warm must not replace it.
    await deps.views.write(row, { ifAbsent: true }).catch((err: unknown) => deps.logger.warn({ err, taskId: id }, 'task view re-warm failed'));
  }
  return task;
}
