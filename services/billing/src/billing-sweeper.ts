import { settleJobId, webhookJobId } from '@gmg/contracts';
import type { TaskRecoveryRepository, TaskRepository, WebhookRepository } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { batchFailed } from '@gmg/observability';
import {
  clearWebhookDeferral,
  enqueueSettlement,
  enqueueWebhook,
  jobPresence,
  shardOf,
  webhookDeferrals,
  type BillingQueue,
  type JobPresence,
  type WebhookQueue,
} from '@gmg/queue';
import { forEachIdPage } from '@gmg/db';
import type { SettleTaskHandler } from './settle-task.handler';

/** The most one sweep loads, in keyset pages (forEachIdPage); the next sweep starts over. */
const MAX_ROWS_PER_SWEEP = 20_000;
/** Idempotency-Keys unbound per statement, and statements per sweep beat. */
const IDEMPOTENCY_EXPIRY_BATCH = 5000;
const IDEMPOTENCY_EXPIRY_BATCHES = 10;

/**
 * The webhooks the sweep owes (billing runs with webhooks): Postgres's owed deliveries (WebhookRepository.owedIds)
 * whose job Redis no longer has are enqueued again. `lookbackMs`: how far back a regular sweep reads (a lost job is
 * found by the first sweep after the loss); the rebuild after a Redis loss reads `maxAgeMs` (no attempt starts later).
 * A shard that declined deliveries at its backlog cap is marked (libs/queue webhook-deferral.ts): a regular sweep then
 * reads back to the first decline (plus `lookbackMs`, at most `maxAgeMs`), until a walk gets through its window with
 * no decline since it read the mark.
 */
export interface OwedWebhooks {
  repo: Pick<WebhookRepository, 'owedIds'>;
  /** The webhook queue's shards, index = shard. */
  queues: readonly WebhookQueue[];
  lookbackMs: number;
  maxAgeMs: number;
}

/**
 * Where the jobs of many tasks stand, each on its task's own shard (shardOf): one pipelined round trip per shard
 * (jobPresence; a shard is one slot), in the order given. A job left on another shard (the count changed while it
 * waited) reads as missing and is enqueued again on its own shard: the settlement and the delivery handler are
 * idempotent, and billing moves jobs off retired shards itself (drainRetiredShards).
 */
async function presenceOnShards<T extends string | { id: string }>(
  queues: readonly (BillingQueue | WebhookQueue)[],
  items: readonly T[],
  jobId: (item: T) => string,
): Promise<JobPresence[]> {
  const out: JobPresence[] = new Array<JobPresence>(items.length);
  const byShard = new Map<number, number[]>();
  items.forEach((item, i) => {
    const shard = shardOf(typeof item === 'string' ? item : item.id, queues.length);
    const list = byShard.get(shard);
    if (list) list.push(i);
    else byShard.set(shard, [i]);
  });
  await Promise.all(
    [...byShard].map(async ([shard, at]) => {
      const found = await jobPresence(
        queues[shard]!,
        at.map((i) => jobId(items[i]!)),
      );
      at.forEach((i, k) => (out[i] = found[k]!));
    }),
  );
  return out;
}

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
    /** The settlement queue's shards, index = shard: a task's job is looked for, and re-sent, on its own shard. */
    private readonly queues: readonly BillingQueue[],
    private readonly settler: SettleTaskHandler,
    private readonly logger: Logger,
    private readonly unsettledAfterMs: number,
    private readonly webhooks?: OwedWebhooks,
  ) {}

  /**
   * `failed`: tasks whose re-send or settlement threw; logged and retried next sweep, never blocking the rest.
   * `olderThanMs` 0 is the rebuild after a Redis loss: every unsettled terminal task, however recent, and every
   * webhook owed within its max age. `webhooksResent`: deliveries owed whose job was gone, enqueued again.
   */
  async sweep(olderThanMs = this.unsettledAfterMs): Promise<{ resent: number; settledDirectly: number; failed: number; webhooksResent: number }> {
    let resent = 0;
    let settledDirectly = 0;
    let failed = 0;
    await forEachIdPage(
      (limit, afterId) => this.recovery.unsettledIds(olderThanMs, limit, afterId),
      MAX_ROWS_PER_SWEEP,
      async (ids) => {
        let presence: JobPresence[];
        try {
          // One pipelined round trip for the page (no per-task getState: it scans the wait list).
          presence = await presenceOnShards(this.queues, ids, settleJobId);
        } catch (e) {
          failed += ids.length;
          batchFailed(
            this.logger,
            'billing_settle_page',
            e,
            { tasks: ids.length },
            'billing sweep could not read the settle jobs of a page; retried next sweep',
          );
          return;
        }
        for (const [i, id] of ids.entries()) {
          try {
            const r = await this.sweepOne(id, presence[i]!);
            if (r === 'resent') resent++;
            if (r === 'settled') settledDirectly++;
          } catch (e) {
            failed++;
            batchFailed(this.logger, 'billing_settle_task', e, { taskId: id }, 'billing sweep could not settle a task; retried next sweep');
          }
        }
      },
    );
    if (resent || settledDirectly || failed) {
      this.logger.warn({ resent, settledDirectly, failed }, 'billing sweep found unsettled tasks');
    }
    const webhooksResent = await this.sweepWebhooks(olderThanMs).catch((e: unknown) => {
      batchFailed(this.logger, 'billing_webhooks', e, {}, 'billing sweep could not check the owed webhooks; retried next sweep');
      return 0;
    });
    // Housekeeping on the same beat: Idempotency-Keys past their 24 h are unbound from their tasks, in bounded
    // batches (a backlog after an outage is worked off over the following beats, never in one long statement).
    await this.expireIdempotencyKeys().catch((e: unknown) =>
      batchFailed(this.logger, 'idempotency_expiry', e, {}, 'could not expire idempotency keys; retried next sweep'),
    );
    return { resent, settledDirectly, failed, webhooksResent };
  }

  /** Up to IDEMPOTENCY_EXPIRY_BATCHES batches of IDEMPOTENCY_EXPIRY_BATCH keys per beat (50,000: 3,300/s at 15 s). */
  private async expireIdempotencyKeys(): Promise<void> {
    for (let i = 0; i < IDEMPOTENCY_EXPIRY_BATCHES; i++) {
      if ((await this.tasks.expireIdempotencyKeys(undefined, IDEMPOTENCY_EXPIRY_BATCH)) < IDEMPOTENCY_EXPIRY_BATCH) return;
    }
  }

  /**
   * Owed webhooks whose delivery job is missing (Redis lost it: a failover before the write replicated, a flush; or
   * it was declined at the webhook backlog's cap):
   * enqueued again under the same jobId (a job still there, live or finished, swallows nothing and is left alone;
   * the delivery handler skips a webhook delivered meanwhile). Keyset pages, bounded like the settlements.
   */
  private async sweepWebhooks(olderThanMs: number): Promise<number> {
    if (!this.webhooks) return 0;
    const { repo, queues } = this.webhooks;
    const { lookbackMs, maxAgeMs } = this.webhooks;
    const deferrals = await webhookDeferrals(queues);
    const since = Math.min(...deferrals.map((d) => d.since));
    const withinMs = olderThanMs === 0 ? maxAgeMs : Math.min(maxAgeMs, lookbackMs + (deferrals.length > 0 ? Math.max(0, Date.now() - since) : 0));
    let resent = 0;
    const walk = await forEachIdPage(
      (limit, afterId) => repo.owedIds(olderThanMs, withinMs, limit, afterId),
      MAX_ROWS_PER_SWEEP,
      async (owed) => {
        const presence = await presenceOnShards(queues, owed, (o) => webhookJobId(o.id, o.event));
        for (const [i, o] of owed.entries()) {
          if (presence[i] !== 'missing') continue;
          // at the webhook backlog's cap nothing is enqueued (gmg_backlog_deferred_total): tried again next sweep
          if (await enqueueWebhook(queues, { taskId: o.id, event: o.event })) resent++;
        }
      },
    );
    // the whole window walked: the deferred deliveries are queued now (or were declined again, which moved the mark)
    if (walk.done) for (const d of deferrals) await clearWebhookDeferral(d);
    if (resent) this.logger.warn({ webhooksResent: resent }, 'billing sweep re-enqueued owed webhooks Redis had lost');
    return resent;
  }

  /**
   * A live settle job (waiting, delayed, active) will settle the task: nothing to do. No job: send it again. A
   * finished job under `settle-<taskId>` would swallow the re-add: settle right here (idempotent).
   */
  private async sweepOne(taskId: string, presence: JobPresence): Promise<'pending' | 'resent' | 'settled'> {
    if (presence === 'live') return 'pending';
    // at the settle backlog's cap nothing is enqueued (gmg_backlog_deferred_total): the task stays unsettled, next sweep
    if (presence === 'missing') return (await enqueueSettlement(this.queues, taskId)) ? 'resent' : 'pending';
    await this.settler.settle(taskId);
    return 'settled';
  }
}
