import type { Worker } from 'bullmq';
import type { DataSource } from 'typeorm';
import { QUEUES, type WebhookJobCatalog } from '@gmg/contracts';
import { WebhookRepository } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import {
  WEBHOOK_JOB_NAMES,
  billingQueueKeyPrefix,
  createTypedWorker,
  createWebhookQueueShards,
  enqueueWebhook,
  type JobHandlers,
  type Redis,
  type WebhookQueue,
} from '@gmg/queue';
import { createWebhookSender } from './webhook-sender';
import { WebhookDeliveryHandler } from './webhook-delivery.handler';

export interface WebhookWorkerOptions {
  concurrency: number;
  /** Local mode: loopback and private callback addresses may be called (WEBHOOK_ALLOW_INSECURE). */
  allowInsecure: boolean;
  timeoutMs: number;
  maxResponseBytes: number;
  /** Attempts in all, and the first retry delay (doubling). */
  attempts: number;
  backoffMs: number;
  /** No attempt later than this after the task ended. */
  maxAgeMs: number;
  /** The webhook queue's shards (QUEUE_SHARDS webhook=K); this process consumes all of them. Default 1. */
  shards?: number;
}

export interface WebhookWorker {
  /** One consumer per shard, index = shard. */
  workers: Worker[];
  /** Every shard, index = shard: a delivery goes to its task's shard (enqueueWebhook). */
  queues: WebhookQueue[];
  close(force?: boolean): Promise<void>;
}

/**
 * The `webhook` queue's consumer (runs in the billing process: docs/webhooks.md says why): one BullMQ worker per
 * shard, sharing the process's concurrency.
 */
export function startWebhookWorker(deps: { ds: DataSource; redis: Redis; prefix: string; logger: Logger }, opts: WebhookWorkerOptions): WebhookWorker {
  const queues = createWebhookQueueShards(deps.redis, deps.prefix, { attempts: opts.attempts, backoffMs: opts.backoffMs }, opts.shards ?? 1);
  const handler = new WebhookDeliveryHandler({
    repo: new WebhookRepository(deps.ds),
    send: createWebhookSender({ allowPrivate: opts.allowInsecure, timeoutMs: opts.timeoutMs, maxResponseBytes: opts.maxResponseBytes }),
    logger: deps.logger,
    maxAgeMs: opts.maxAgeMs,
  });
  const handlers: JobHandlers<WebhookJobCatalog> = {
    deliver: (job) => handler.deliver(job.data, { attempt: job.attemptsMade + 1, deliveryId: `whd_${job.id}` }),
  };
  const perShard = Math.max(1, Math.ceil(opts.concurrency / queues.length));
  const workers = queues.map((_, shard) => {
    const w = createTypedWorker<WebhookJobCatalog>(QUEUES.webhook, handlers, WEBHOOK_JOB_NAMES, {
      connection: deps.redis,
      prefix: deps.prefix,
      queuePrefix: billingQueueKeyPrefix(deps.prefix, QUEUES.webhook, shard),
      concurrency: perShard,
    });
    w.on('error', (err) => deps.logger.error({ shard, err: err.message }, 'webhook worker error'));
    return w;
  });
  return {
    workers,
    queues,
    async close(force = false) {
      await Promise.all(workers.map((w) => w.close(force)));
      await Promise.all(queues.map((q) => q.close()));
    },
  };
}

/**
 * Where settlement announces a terminal task: a task with a callback_url gets its delivery job (jobId per task and
 * state, so a repeated settlement adds nothing). Called after the settlement committed, on every outcome — also
 * `duplicate` — so a crash between the commit and this enqueue is repaired by the settle job's retry.
 */
export class WebhookNotifier {
  constructor(
    private readonly repo: Pick<WebhookRepository, 'target'>,
    private readonly queues: WebhookQueue | readonly WebhookQueue[],
  ) {}

  async taskSettled(taskId: string): Promise<void> {
    const target = await this.repo.target(taskId);
    if (!target) return;
    const status = target.task.status;
    if (status !== 'completed' && status !== 'failed') return;
    await enqueueWebhook(this.queues, { taskId, event: status });
  }
}
