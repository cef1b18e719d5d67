import type { Worker } from 'bullmq';
import type { DataSource } from 'typeorm';
import { QUEUES, type BillingJobCatalog } from '@gmg/contracts';
import { RetentionRepository, TaskRecoveryRepository, TaskRepository, UsageRepository, WebhookRepository, type RetentionPolicy } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { SpanKind, recordSweep, withSpan } from '@gmg/observability';
import {
  BILLING_JOB_NAMES,
  createBillingQueue,
  createTypedWorker,
  healSentinelKey,
  queueKeyPrefix,
  requireTaskId,
  type BillingQueue,
  type JobHandlers,
  type Redis,
  type WebhookQueue,
} from '@gmg/queue';
import { SweepKeeper, sweepSchedule } from '@gmg/tasks';
import { BillingSweeper } from './billing-sweeper';
import { SettleTaskHandler } from './settle-task.handler';
import { WebhookNotifier } from './webhooks/webhook-worker';

export interface BillingWorkerDeps {
  ds: DataSource;
  /** A worker connection (maxRetriesPerRequest: null). */
  redis: Redis;
  prefix: string;
  logger: Logger;
  /** The webhook queue (startWebhookWorker): settled tasks with a callback_url get their delivery job. */
  webhooks?: WebhookQueue;
}

export interface BillingWorkerOptions {
  concurrency: number;
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
  worker: Worker;
  queue: BillingQueue;
  settler: SettleTaskHandler;
  sweeper: BillingSweeper;
  /** Undefined when sweepIntervalMs <= 0. */
  keeper?: SweepKeeper;
  close(force?: boolean): Promise<void>;
}

/** The `billing` queue: `settle` jobs and the periodic `sweep`. */
export async function startBillingWorker(deps: BillingWorkerDeps, opts: BillingWorkerOptions): Promise<BillingWorker> {
  const { ds, redis, prefix, logger } = deps;
  const queue = createBillingQueue(redis, prefix);
  const notifier = deps.webhooks ? new WebhookNotifier(new WebhookRepository(ds), deps.webhooks) : undefined;
  const settler = new SettleTaskHandler(ds, logger, notifier);
  const retention = new RetentionRepository(ds);
  const usage = new UsageRepository(ds);
  const owed = deps.webhooks && {
    repo: new WebhookRepository(ds),
    queue: deps.webhooks,
    lookbackMs: opts.webhookLookbackMs ?? 10 * 60_000,
    maxAgeMs: opts.webhookMaxAgeMs ?? 24 * 3600_000,
  };
  const sweeper = new BillingSweeper(new TaskRepository(ds), new TaskRecoveryRepository(ds), queue, settler, logger, opts.unsettledAfterMs ?? 30_000, owed);
  const handlers: JobHandlers<BillingJobCatalog> = {
    settle: (job) =>
      withSpan('billing settle', { kind: SpanKind.CONSUMER, parent: job.data.trace, attributes: { 'gmg.task_id': String(job.data.taskId) } }, () =>
        settler.settle(requireTaskId(job.data)),
      ),
    sweep: async () => {
      const r = await sweeper.sweep();
      recordSweep('billing', { resent: r.resent, settled_late: r.settledDirectly, webhook_resent: r.webhooksResent });
      // on the same beat: tables that stay small (bounded batches; a failure is retried at the next beat)
      const kept =
        opts.retention &&
        (await retention.sweep(opts.retention).catch((e: unknown) => {
          logger.warn({ err: (e as Error).message }, 'retention batch failed; retried next sweep');
          return undefined;
        }));
      if (kept && (kept.archivedTasks || kept.archivedLedgerEntries || kept.prunedDeliveries))
        logger.info(kept, 'retention: tasks and ledger entries archived, webhook deliveries pruned');
      // the usage rollup (GET /api/usage): settled tasks past its watermark, in bounded batches
      const rolledUp = await usage.sweep().catch((e: unknown) => {
        logger.warn({ err: (e as Error).message }, 'usage rollup batch failed; retried next sweep');
        return 0;
      });
      return { ...r, ...kept, rolledUp };
    },
  };
  const worker = createTypedWorker<BillingJobCatalog>(QUEUES.billing, handlers, BILLING_JOB_NAMES, {
    connection: redis,
    prefix,
    concurrency: opts.concurrency,
    lockDuration: opts.lockDuration,
    stalledInterval: opts.stalledInterval,
  });
  worker.on('failed', (job, err) => logger.error({ jobId: job?.id, job: job?.name, attempts: job?.attemptsMade, err: err.message }, 'billing job failed'));
  worker.on('error', (err) => logger.error({ err: err.message }, 'billing worker error'));
  let keeper: SweepKeeper | undefined;
  if (opts.sweepIntervalMs > 0) {
    const every = opts.sweepIntervalMs;
    keeper = new SweepKeeper({
      name: 'billing',
      redis,
      intervalMs: every,
      logger,
      // the webhook queue lives in a slot of its own: losing it alone (its shard failed over empty) rebuilds too
      sentinelKey: [QUEUES.billing, ...(deps.webhooks ? [QUEUES.webhook] : [])].map((q) => healSentinelKey(queueKeyPrefix(prefix, q))),
      ensureSchedule: sweepSchedule(queue, every),
      // the settle (or webhook) jobs went with the data: settle every unsettled terminal task now, not after
      // unsettledAfterMs, and enqueue again every webhook owed within its max age
      rebuild: () => sweeper.sweep(0),
    });
    await keeper.start();
  }
  return {
    worker,
    queue,
    settler,
    sweeper,
    keeper,
    async close(force = false) {
      await keeper?.stop();
      await worker.close(force);
      await queue.close();
    },
  };
}
