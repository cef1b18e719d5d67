import { settleJobId } from '@gmg/contracts';
import type { TaskRecoveryRepository, TaskRepository } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { enqueueSettlement, jobPresence, type BillingQueue, type JobPresence } from '@gmg/queue';
import type { SettleTaskHandler } from './settle-task.handler';

/** Ids one sweep page reads, and the most one sweep loads (the next sweep starts over). */
const PAGE_SIZE = 500;
const MAX_ROWS_PER_SWEEP = 20_000;

/**
 * Re-sends settlements of terminal tasks left with neither capture nor release (the worker crashed between its
 * terminal UPDATE and the enqueue, or Redis was away or lost its data). A finished job under `settle-<taskId>`
 * would swallow the re-add, so when one is in the way the task is settled right here (settleTask is idempotent).
 * Reads are keyset pages of ids (no blobs), bounded per sweep; each task is handled on its own.
 */
export class BillingSweeper {
  constructor(
    private readonly tasks: TaskRepository,
    private readonly recovery: TaskRecoveryRepository,
    private readonly queue: BillingQueue,
    private readonly settler: SettleTaskHandler,
    private readonly logger: Logger,
    private readonly unsettledAfterMs: number,
  ) {}

  /**
   * `failed`: tasks whose re-send or settlement threw; logged and retried next sweep, never blocking the rest.
   * `olderThanMs` 0 is the rebuild after a Redis loss: every unsettled terminal task, however recent.
   */
  async sweep(olderThanMs = this.unsettledAfterMs): Promise<{ resent: number; settledDirectly: number; failed: number }> {
    let resent = 0;
    let settledDirectly = 0;
    let failed = 0;
    let afterId: string | undefined;
    for (let seen = 0; seen < MAX_ROWS_PER_SWEEP;) {
      const limit = Math.min(PAGE_SIZE, MAX_ROWS_PER_SWEEP - seen);
      const ids = await this.recovery.unsettledIds(olderThanMs, limit, afterId);
      let presence: JobPresence[] | undefined;
      try {
        // One pipelined round trip for the page (no per-task getState: it scans the wait list).
        presence = await jobPresence(this.queue, ids.map(settleJobId));
      } catch (e) {
        failed += ids.length;
        this.logger.error({ tasks: ids.length, err: (e as Error).message }, 'billing sweep could not read the settle jobs of a page; retried next sweep');
      }
      for (const [i, id] of (presence ? ids : []).entries()) {
        try {
          const r = await this.sweepOne(id, presence![i]!);
          if (r === 'resent') resent++;
          if (r === 'settled') settledDirectly++;
        } catch (e) {
          failed++;
          this.logger.error({ taskId: id, err: (e as Error).message }, 'billing sweep could not settle a task; retried next sweep');
        }
      }
      seen += ids.length;
      if (ids.length < limit) break;
      afterId = ids[ids.length - 1];
    }
    if (resent || settledDirectly || failed) {
      this.logger.warn({ resent, settledDirectly, failed }, 'billing sweep found unsettled tasks');
    }
    // Housekeeping on the same beat: Idempotency-Keys past their 24 h are unbound from their tasks.
    await this.tasks.expireIdempotencyKeys().catch((e: unknown) =>
      this.logger.warn({ err: (e as Error).message }, 'could not expire idempotency keys; retried next sweep'));
    return { resent, settledDirectly, failed };
  }

  /**
   * A live settle job (waiting, delayed, active) will settle the task: nothing to do. No job: send it again. A
   * finished job under `settle-<taskId>` would swallow the re-add: settle right here (idempotent).
   */
  private async sweepOne(taskId: string, presence: JobPresence): Promise<'pending' | 'resent' | 'settled'> {
    if (presence === 'live') return 'pending';
    if (presence === 'missing') {
      await enqueueSettlement(this.queue, taskId);
      return 'resent';
    }
    await this.settler.settle(taskId);
    return 'settled';
  }
}
