import type { DataSource } from 'typeorm';
import { settleTask, TaskRepository, type SettleOutcome } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import type { TaskViewStore } from '@gmg/tasks';

/**
 * Settles one task (capture or release, exactly once: settleTask is idempotent) and rewrites its view so `cost`
 * reads 0 once a failed task is refunded. A task that is not terminal yet throws: the job retries with backoff.
 */
export class SettleTaskHandler {
  private readonly tasks: TaskRepository;

  constructor(private readonly ds: DataSource, private readonly views: TaskViewStore, private readonly logger: Logger) {
    this.tasks = new TaskRepository(ds);
  }

  async settle(taskId: string): Promise<SettleOutcome> {
    const outcome = await settleTask(this.ds, taskId);
    if (outcome === 'not_terminal') throw new Error(`task ${taskId} is not terminal yet; settlement retried later`);
    if (outcome === 'not_found') {
      this.logger.warn({ taskId }, 'settlement for an unknown task; dropped');
      return outcome;
    }
    if (outcome !== 'duplicate') this.logger.info({ taskId, outcome }, 'task settled');
    const t = await this.tasks.get(taskId);
    if (t) {
      try {
        await this.views.write(t);
      } catch (e) {
        this.logger.warn({ taskId, err: (e as Error).message }, 'task view write failed after settlement');
      }
    }
    return outcome;
  }
}
