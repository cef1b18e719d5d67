import type { DataSource } from 'typeorm';
import { settle, type SettleOutcome } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { settlements } from '@gmg/observability';

/**
 * Settles one task (capture or release, exactly once: settleTask is idempotent). The task view needs no rewrite:
 * it was written at the terminal transition, and `cost` is derived from the row's status, which settling does
 * not change. A task that is not terminal yet throws: the job retries with backoff.
 */
export class SettleTaskHandler {
  constructor(
    private readonly ds: DataSource,
    private readonly logger: Logger,
    /**
     * Optional (webhooks): told after every settlement that found a terminal task with a callback_url, `duplicate`
     * included, so a crash between the commit and the webhook enqueue is repaired by the settle job's retry. Its
     * failure fails the settle job (retried; settling again is a no-op). A task without a callback_url (known from
     * the settlement statement itself) costs no second read.
     */
    private readonly onSettled?: { taskSettled(taskId: string): Promise<void> },
  ) {}

  async settle(taskId: string): Promise<SettleOutcome> {
    const { outcome, hasCallback } = await settle(this.ds, taskId);
    settlements.inc({ outcome });
    if (outcome === 'not_terminal') throw new Error(`task ${taskId} is not terminal yet; settlement retried later`);
    if (outcome === 'not_found') {
      this.logger.warn({ taskId }, 'settlement for an unknown task; dropped');
      return outcome;
    }
    if (outcome !== 'duplicate') this.logger.info({ taskId, outcome }, 'task settled');
    if (hasCallback) await this.onSettled?.taskSettled(taskId);
    return outcome;
  }
}
