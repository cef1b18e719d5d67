import { Queue, type Worker } from 'bullmq';
import type { DataSource } from 'typeorm';
import { QUEUES, type BillingJobCatalog } from '@gmg/contracts';
import { RetentionRepository, TaskRecoveryRepository, TaskRepository, UsageRepository, WebhookRepository, type RetentionPolicy } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { SpanKind, batchFailed, recordSweep, withSpan } from '@gmg/observability';
import {
  BILLING_JOB_NAMES,
  billingQueueKeyPrefix,
  createBillingQueue,
  createBillingQueueShards,
  createTypedWorker,
  drainRetiredShards,
  healSentinelKey,
  requireTaskId,
  type BillingQueue,
  type JobHandlers,
  type Redis,
  type WebhookQueue,
} from '@gmg/queue';
import { SweepKeeper, sweepSchedule } from '@gmg/queue';
import { BillingSweeper } from './billing-sweeper';
import { SettleTaskHandler } from './settle-task.handler';
import { WebhookNotifier } from './webhooks/webhook-worker';

export interface BillingWorkerDeps {
  ds: DataSource;
  /** A worker connection (maxRetriesPerRequest: null). */
  redis: Redis;
  prefix: string;
  logger: Logger;
  /** The webhook queue's shards (startWebhookWorker): settled tasks with a callback_url get their delivery job. */
  webhooks?: readonly WebhookQueue[];
}

export interface BillingWorkerOptions {
  concurrency: number;
  /** The settlement queue's shards (QUEUE_SHARDS billing=K); this process consumes all of them. Default 1. */
  shards?: number;
  /**
   * 0 or less: no sweep scheduler and no keeper (tests sweep by hand). Otherwise a SweepKeeper re-creates the
   * scheduler every interval and, after a Redis loss, settles every unsettled terminal task at once.
   */
  sweepIntervalMs: number;
  /** Terminal tasks unsettled this long are re-sent. Default 30 s. */
  unsettledAfterMs?: number;
  lockDuration?: number;
  stalledInterval?: number;
  /** Retention run on the sweep's beat (docs/operations.md, "Retention"); none when absent. */
  retention?: RetentionPolicy;
  /**
   * With webhooks: how far back a regular sweep looks for owed webhooks whose job Redis lost (default 10 min), and
   * their max age (WEBHOOK_MAX_AGE_HOURS; default 24 h), which the rebuild after a Redis loss reads back to.
   */
  webhookLookbackMs?: number;
  webhookMaxAgeMs?: number;
}

export interface BillingWorker {
  /** One consumer per shard, index = shard (shard 0's also runs the periodic sweep). */
  workers: Worker[];
  /** Every shard, index = shard: a settlement goes to its task's shard (enqueueSettlement). */
  queues: BillingQueue[];
  settler: SettleTaskHandler;
  sweeper: BillingSweeper;
  /** Undefined when sweepIntervalMs <= 0. */
  keeper?: SweepKeeper;
  close(force?: boolean): Promise<void>;
}

/**
 * The `billing` queue: `settle` jobs on every shard (one BullMQ worker per shard, sharing the process's concurrency)
 * and the periodic `sweep` on shard 0, which also moves the jobs left on retired shards of billing's two queues
 * (QUEUE_SHARDS lowered) onto the current ones.
 */
export async function startBillingWorker(deps: BillingWorkerDeps, opts: BillingWorkerOptions): Promise<BillingWorker> {
  const { ds, redis, prefix, logger } = deps;
  const queues = createBillingQueueShards(redis, prefix, opts.shards ?? 1);
  const queue = queues[0]!;
  const notifier = deps.webhooks ? new WebhookNotifier(new WebhookRepository(ds), deps.webhooks) : undefined;
  const settler = new SettleTaskHandler(ds, logger, notifier);
  const retention = new RetentionRepository(ds);
  const usage = new UsageRepository(ds);
  const owed = deps.webhooks && {
    repo: new WebhookRepository(ds),
    queues: deps.webhooks,
    lookbackMs: opts.webhookLookbackMs ?? 10 * 60_000,
    maxAgeMs: opts.webhookMaxAgeMs ?? 24 * 3600_000,
  };
  const sweeper = new BillingSweeper(new TaskRepository(ds), new TaskRecoveryRepository(ds), queues, settler, logger, opts.unsettledAfterMs ?? 30_000, owed);
  // jobs on a shard past the current count (QUEUE_SHARDS lowered while they waited) would wait for nobody
  const drainRetired = async (): Promise<number> => {
    let moved = await drainRetiredShards({
      redis,
      name: QUEUES.billing,
      keyPrefix: (shard) => billingQueueKeyPrefix(prefix, QUEUES.billing, shard),
      open: (shard) => createBillingQueue(redis, prefix, shard),
      current: queues,
    });
    const hooks = deps.webhooks;
    if (hooks?.length) {
      moved += await drainRetiredShards({
        redis,
        name: QUEUES.webhook,
        keyPrefix: (shard) => billingQueueKeyPrefix(prefix, QUEUES.webhook, shard),
        // only read and removed from: the options of a queue that adds are the current shards'
        open: (shard) => new Queue(QUEUES.webhook, { connection: redis, prefix: billingQueueKeyPrefix(prefix, QUEUES.webhook, shard) }) as WebhookQueue,
        current: hooks,
      });
    }
    if (moved) logger.warn({ moved }, 'billing moved jobs off retired queue shards (QUEUE_SHARDS lowered)');
    return moved;
  };
  const handlers: JobHandlers<BillingJobCatalog> = {
    settle: (job) =>
      withSpan('billing settle', { kind: SpanKind.CONSUMER, parent: job.data.trace, attributes: { 'gmg.task_id': String(job.data.taskId) } }, () =>
        settler.settle(requireTaskId(job.data)),
      ),
    sweep: async () => {
      const retiredMoved = await drainRetired().catch((e: unknown) => {
        batchFailed(logger, 'retired_drain', e, {}, 'could not read retired queue shards; retried next sweep');
        return 0;
      });
      const r = { ...(await sweeper.sweep()), retiredMoved };
      recordSweep('billing', { resent: r.resent, settled_late: r.settledDirectly, webhook_resent: r.webhooksResent });
      // on the same beat: tables that stay small (bounded batches; a failure is retried at the next beat)
      const kept =
        opts.retention &&
        (await retention.sweep(opts.retention).catch((e: unknown) => {
          batchFailed(logger, 'retention', e, {}, 'retention batch failed; retried next sweep');
          return undefined;
        }));
      if (kept && (kept.archivedTasks || kept.archivedLedgerEntries || kept.prunedDeliveries))
        logger.info(kept, 'retention: tasks and ledger entries archived, webhook deliveries pruned');
      // the usage rollup (GET /api/usage): settled tasks past its watermark, in bounded batches
      const rolledUp = await usage.sweep().catch((e: unknown) => {
        batchFailed(logger, 'usage_rollup', e, {}, 'usage rollup batch failed; retried next sweep');
        return 0;
      });
      return { ...r, ...kept, rolledUp };
    },
  };
  const perShard = Math.max(1, Math.ceil(opts.concurrency / queues.length));
  const workers = queues.map((_, shard) => {
    const w = createTypedWorker<BillingJobCatalog>(QUEUES.billing, handlers, BILLING_JOB_NAMES, {
      connection: redis,
      prefix,
      queuePrefix: billingQueueKeyPrefix(prefix, QUEUES.billing, shard),
      concurrency: perShard,
      lockDuration: opts.lockDuration,
      stalledInterval: opts.stalledInterval,
    });
    w.on('failed', (job, err) => logger.error({ shard, jobId: job?.id, job: job?.name, attempts: job?.attemptsMade, err: err.message }, 'billing job failed'));
    w.on('error', (err) => logger.error({ shard, err: err.message }, 'billing worker error'));
    return w;
  });
  let keeper: SweepKeeper | undefined;
  if (opts.sweepIntervalMs > 0) {
    const every = opts.sweepIntervalMs;
    keeper = new SweepKeeper({
      name: 'billing',
      redis,
      intervalMs: every,
      logger,
      // every shard of both queues lives in a slot of its own: losing one alone (its Redis shard failed over empty)
      // rebuilds too
      sentinelKey: [
        ...queues.map((_, shard) => healSentinelKey(billingQueueKeyPrefix(prefix, QUEUES.billing, shard))),
        ...(deps.webhooks ?? []).map((_, shard) => healSentinelKey(billingQueueKeyPrefix(prefix, QUEUES.webhook, shard))),
      ],
      ensureSchedule: sweepSchedule(queue, every),
      // the settle (or webhook) jobs went with the data: settle every unsettled terminal task now, not after
      // unsettledAfterMs, and enqueue again every webhook owed within its max age
      rebuild: () => sweeper.sweep(0),
    });
    await keeper.start();
  }
  return {
    workers,
    queues,
    settler,
    sweeper,
    keeper,
    async close(force = false) {
      await keeper?.stop();
      await Promise.all(workers.map((w) => w.close(force)));
      await Promise.all(queues.map((q) => q.close()));
    },
  };
}
