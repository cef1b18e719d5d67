import { CANCELLED_MESSAGE, TASK_FAILURE_TYPES, type Pool } from '@gmg/contracts';
import type { CancelOutcome, TaskRecord } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';

export interface CancelTaskDeps {
  tasks: {
    get(id: string): Promise<TaskRecord | null>;
    cancel(id: string, accountId: string, error: { code: 'task_failed'; message: string; type: string }): Promise<CancelOutcome>;
  };
  views: { write(t: TaskRecord): Promise<unknown> };
  queue: { requestSettlement(taskId: string): Promise<void>; removeTaskJob(pool: Pool, taskId: string): Promise<boolean> };
  /** Tells the upstream (best effort, not awaited by the caller's answer). */
  upstream: { cancel(task: TaskRecord): Promise<void> };
  logger: Logger;
}

const TASK_ID = /^task_[0-9A-Za-z]{1,64}$/;

/**
 * The owner's cancel: one conditional UPDATE makes the task `failed` (type `cancelled`) unless it already ended, so
 * exactly one of cancel and a completing poll wins; the winner — here — asks for the settlement, which releases the
 * whole hold (UNIQUE(task_id, kind) makes it once). Then, none of it fatal: the task view, the waiting/delayed job
 * dropped (an active one ends at its next step, which re-reads the row), the upstream told. A task of another
 * account answers like a missing one (`notFound`); an ended one is a 409 naming its state.
 */
export async function cancelTask(
  deps: CancelTaskDeps,
  accountId: string,
  id: string,
  notFound: (id: string) => DomainError,
  onlyModel?: string,
): Promise<TaskRecord> {
  if (!TASK_ID.test(id)) throw notFound(id);
  if (onlyModel) {
    // The art suite's path cancels art tasks only (a model never changes, so this read cannot go stale).
    const row = await deps.tasks.get(id);
    if (!row || row.accountId !== accountId || row.model !== onlyModel) throw notFound(id);
  }
  const out = await deps.tasks.cancel(id, accountId, { code: 'task_failed', message: CANCELLED_MESSAGE, type: TASK_FAILURE_TYPES.cancelled });
  if (out.outcome === 'not_found') throw notFound(id);
  if (out.outcome === 'terminal') {
    throw new DomainError('conflict', `Task ${id} is already ${out.task.status} and cannot be cancelled`, {
      field: 'id',
      rule: 'not_terminal',
      status: out.task.status,
    });
  }
  const task = out.task;
  deps.logger.info({ taskId: task.id, model: task.model, outcome: 'cancelled' }, 'task cancelled by its owner');
  // A lost settlement request is found by the billing sweeper (terminal and unsettled).
  await deps.queue
    .requestSettlement(task.id)
    .catch((err: unknown) => deps.logger.error({ err, taskId: task.id }, 'settlement enqueue failed after cancel; the billing sweeper will retry'));
  await deps.views.write(task).catch((err: unknown) => deps.logger.warn({ err, taskId: task.id }, 'task view write failed after cancel'));
  await deps.queue
    .removeTaskJob(task.pool, task.id)
    .catch((err: unknown) => deps.logger.warn({ err, taskId: task.id }, 'could not drop the job of a cancelled task; its next step ends it'));
  if (task.upstreamTaskId) {
    void deps.upstream
      .cancel(task)
      .catch((err: unknown) =>
        deps.logger.warn({ taskId: task.id, err: (err as Error).message }, 'upstream cancel failed; the upstream task runs on unbilled'),
      );
  }
  return task;
}
