import { settleJobId } from '@gmg/contracts';
import type { TaskRepository } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import type { BillingQueue } from '@gmg/queue';
import type { SettleTaskHandler } from './settle-task.handler';

/**
 * Re-sends settlements of terminal tasks left with neither capture nor release (the worker crashed between its
 * terminal UPDATE and the enqueue, or Redis was away). A finished job under `settle-<taskId>` would swallow the
 * re-add, so when one is in the way the task is settled right here (settleTask is idempotent).
 */
export class BillingSweeper {
  constructor(
    private readonly tasks: TaskRepository,
    private readonly queue: BillingQueue,
    private readonly settler: SettleTaskHandler,
    private readonly logger: Logger,
    private readonly unsettledAfterMs: number,
  ) {}

  async sweep(): Promise<{ resent: number; settledDirectly: number }> {
    let resent = 0;
    let settledDirectly = 0;
    for (const t of await this.tasks.findUnsettled(this.unsettledAfterMs)) {
      const jobId = settleJobId(t.id);
      const job = await this.queue.getJob(jobId);
      const state = job ? await job.getState() : 'missing';
      if (state === 'waiting' || state === 'active' || state === 'delayed' || state === 'prioritized') continue;
      if (state === 'missing' || state === 'unknown') {
        await this.queue.add('settle', { taskId: t.id }, { jobId });
        resent++;
      } else {
        await this.settler.settle(t.id);
        settledDirectly++;
      }
    }
    if (resent || settledDirectly) this.logger.warn({ resent, settledDirectly }, 'billing sweep found unsettled tasks');
    return { resent, settledDirectly };
  }
}
