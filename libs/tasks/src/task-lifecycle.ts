import { isTerminal, type TaskError, type TaskResult } from '@gmg/contracts';
import type { TaskRecord, TaskRepository } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { recordTaskFinished } from '@gmg/observability';
import type { TaskViewStore } from './task-view.store';

/** Where the winner of a terminal transition sends the settlement (Producers and a billing Queue fit). */
export interface SettlementSink {
  /** false: not enqueued, the settle backlog at its cap (libs/queue BACKLOG_CAPS); the billing sweep sends it later. */
  enqueueSettlement(taskId: string): Promise<boolean | void>;
}

/**
 * A pool's own step before a task completes (avatar assets: record each asset's review, list them under our ids,
 * capture only the approved ones). It runs before the terminal transition and must be idempotent: a resumed job
 * may run it again, and it may run for a task that another writer ends first.
 */
export interface CompletionHandler {
  onComplete(task: TaskRecord, upstreamResult: TaskResult): Promise<{ result: TaskResult; captureAmount?: bigint }>;
}

/**
 * State changes of a task as the workers make them: the row first (Postgres is the record), then the Redis view.
 * Terminal transitions are conditional UPDATEs: only the winner (non-null) enqueues the settlement and writes the
 * view, so a task is settled once however many writers race (a poll, the timeout sweeper, a resumed stalled job).
 */
export class TaskLifecycle {
  constructor(
    private readonly tasks: TaskRepository,
    private readonly views: TaskViewStore,
    private readonly settlements: SettlementSink,
    private readonly logger: Logger,
    /** Optional (added with avatar assets): the pool's completion step. */
    private readonly completion?: CompletionHandler,
  ) {}

  /** A view write failure is logged, never fatal: reads fall back to Postgres. */
  async writeView(t: TaskRecord): Promise<void> {
    try {
      await this.views.write(t);
    } catch (e) {
      this.logger.warn({ taskId: t.id, err: (e as Error).message }, 'task view write failed');
    }
  }

  /**
   * `native`: the upstream's own final view of the task, stored with the transition when the upstream has one.
   * `captureAmount`: what settlement captures when the result delivered less than was billed (a partial result);
   * a pool's completion handler, when it has one, decides the capture itself.
   */
  async complete(
    taskId: string,
    result: TaskResult,
    native?: Record<string, unknown>,
    captureAmount?: bigint,
    submittedTo?: { channelId: string; upstreamTaskId: string; channelKeyId?: string | null },
  ): Promise<TaskRecord | null> {
    if (!this.completion) return this.settleWinner(await this.tasks.complete(taskId, result, { native, captureAmount, submittedTo }), 'completed');
    const task = await this.tasks.get(taskId);
    if (!task || isTerminal(task.status)) return null;
    const out = await this.completion.onComplete(task, result);
    return this.settleWinner(await this.tasks.complete(taskId, out.result, { captureAmount: out.captureAmount, native, submittedTo }), 'completed');
  }

  async fail(taskId: string, message: string, type?: string, native?: Record<string, unknown>): Promise<TaskRecord | null> {
    const error: TaskError = { code: 'task_failed', message, ...(type ? { type } : {}) };
    return this.settleWinner(await this.tasks.fail(taskId, error, native), 'failed');
  }

  private async settleWinner(rec: TaskRecord | null, outcome: string): Promise<TaskRecord | null> {
    if (!rec) return null;
    recordTaskFinished(rec);
    this.logger.info({ taskId: rec.id, model: rec.model, outcome, error: rec.error?.message }, 'task finished');
    await this.writeView(rec);
    try {
      if ((await this.settlements.enqueueSettlement(rec.id)) === false)
        this.logger.warn({ taskId: rec.id }, 'settle backlog at its cap: settlement left to the billing sweep (the task stays unsettled in Postgres)');
    } catch (e) {
      // The billing sweeper finds terminal tasks without capture/release and settles them later.
      this.logger.error({ taskId: rec.id, err: (e as Error).message }, 'settlement enqueue failed; the billing sweeper will retry');
    }
    return rec;
  }
}
