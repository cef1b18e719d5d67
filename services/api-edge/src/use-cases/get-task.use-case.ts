import type { TaskView, UnifiedTask } from '@gmg/contracts';
import type { TaskRecord } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';

/** What reading a task of the caller's account needs: the Redis view, Postgres, and a line when the view fails. */
export interface TaskReadDeps {
  views: { read(id: string): Promise<TaskView | null>; write(t: TaskRecord, opts?: { ifAbsent?: boolean }): Promise<unknown> };
  tasks: { get(id: string): Promise<TaskRecord | null> };
  logger: Pick<Logger, 'warn'>;
}

export interface GetTaskDeps extends TaskReadDeps {
  toUnifiedTask(t: TaskRecord): UnifiedTask;
}

/** Task ids are `task_` + base62; anything else cannot exist, so it skips both stores. */
const TASK_ID = /^task_[0-9A-Za-z]{1,64}$/;

/** One message and one error for "missing" and "someone else's": the answer must not reveal which. */
const notFound = (id: string) => new DomainError('task_not_found', `Task ${id} not found`);

/**
 * A task of the caller's account as `as` makes it (undefined: not a task this route answers): the Redis view first
 * (written at every change), Postgres when the view is missing or says undefined (a missing view is then re-warmed).
 * A task of another account answers exactly like a missing one, `missing(id)`, and takes the same path: a foreign
 * view hit still goes through the Postgres lookup before answering.
 */
export async function readOwnTask<T>(
  deps: TaskReadDeps,
  accountId: string,
  id: string,
  as: { view(v: TaskView): T | undefined; row(r: TaskRecord): T | undefined },
  missing: (id: string) => Error,
): Promise<T> {
  if (!TASK_ID.test(id)) throw missing(id);
  const view = await deps.views.read(id).catch((err: unknown) => {
    deps.logger.warn({ err, taskId: id }, 'task view read failed; falling back to Postgres');
    return null;
  });
  const hit = view && view.accountId === accountId ? as.view(view) : undefined;
  if (hit !== undefined) return hit;
  const row = await deps.tasks.get(id);
  const task = row && row.accountId === accountId ? as.row(row) : undefined;
  if (!row || task === undefined) throw missing(id);
  // ifAbsent: a worker may have written a newer view since `row` was read; the re-warm must not replace it.
  if (!view) await deps.views.write(row, { ifAbsent: true }).catch((err: unknown) => deps.logger.warn({ err, taskId: id }, 'task view re-warm failed'));
  return task;
}

/** The unified task of the caller's account (readOwnTask). */
export const getTask = (deps: GetTaskDeps, accountId: string, id: string): Promise<UnifiedTask> =>
  readOwnTask(deps, accountId, id, { view: (v) => v.task, row: (r) => deps.toUnifiedTask(r) }, notFound);
