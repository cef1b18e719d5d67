import type { DataSource } from 'typeorm';
import { MAX_SETTLE_BATCH, settle, settleMany, StatementBatcher, type Pending, type SettleOutcome } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { batchFailed, settlements } from '@gmg/observability';

type Settlement = Awaited<ReturnType<typeof settle>>;
/** A settle job waiting for its batch: its task id, and its settlement once the batch is written. */
type Waiter = Pending<string, Settlement>;

/**
 * Settles one task (capture or release, exactly once: the settlement statement is idempotent). The task view needs
 * no rewrite: it was written at the terminal transition, and `cost` is derived from the row's status, which
 * settling does not change. A task that is not terminal yet throws: the job retries with backoff.
 *
 * Batching: the settle jobs running at once in this process share one statement (`settleMany`). One batch is in
 * flight at a time; the jobs that arrive meanwhile form the next one, so a lone settlement goes at once and a
 * backlog goes up to MAX_SETTLE_BATCH per statement and commit (docs/benchmarks.md, "Billing throughput"). One
 * statement at a time also means two batches of this process never wait on each other's account rows. If a batch
 * fails (a deadlock with another billing replica's batch, a bad row), each of its tasks is settled on its own, so
 * one task that cannot be settled fails alone.
 */
export class SettleTaskHandler {
  private readonly batcher = new StatementBatcher<string, Settlement>((batch) => this.settleBatch(batch), {
    maxBatch: MAX_SETTLE_BATCH,
  });

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
    const { outcome, hasCallback } = await this.batcher.push(taskId);
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

  /** One statement for the batch; if it fails, each of its tasks alone, in the batch's slot. */
  private async settleBatch(batch: Waiter[]): Promise<void> {
    const ids = [...new Set(batch.map((w) => w.item))];
    let results: Map<string, Settlement> | undefined;
    try {
      results = await settleMany(this.ds, ids);
    } catch (e) {
      batchFailed(this.logger, 'settle_batch', e, { tasks: ids.length }, 'settlement batch failed; settling its tasks one by one');
    }
    if (results) this.answer(batch, results);
    else await Promise.all(batch.map((w) => settle(this.ds, w.item).then(w.resolve, w.reject)));
  }

  /** Each waiter its task's result; a second job for the same task in one batch found it settled: `duplicate`. */
  private answer(batch: Waiter[], results: Map<string, Settlement>): void {
    const answered = new Set<string>();
    for (const w of batch) {
      const r = results.get(w.item) ?? { outcome: 'not_found' as const, hasCallback: false };
      const settledNow = r.outcome === 'captured' || r.outcome === 'released';
      w.resolve(answered.has(w.item) && settledNow ? { ...r, outcome: 'duplicate' } : r);
      answered.add(w.item);
    }
  }
}
