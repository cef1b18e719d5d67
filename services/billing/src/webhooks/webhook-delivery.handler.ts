import { UnrecoverableError } from 'bullmq';
import { WEBHOOK_HEADERS, signWebhook, type WebhookJobData } from '@gmg/contracts';
import type { WebhookRepository } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { toUnifiedTask } from '@gmg/db';
import type { WebhookSendResult } from './webhook-sender';

export interface WebhookDeliveryDeps {
  repo: Pick<WebhookRepository, 'target' | 'delivered' | 'secretOf' | 'recordAttempt'>;
  send: (url: string, body: string, headers: Record<string, string>) => Promise<WebhookSendResult>;
  logger: Logger;
  /** No attempt starts later than this after the task ended (docs/webhooks.md: 24 h). */
  maxAgeMs: number;
  now?: () => number;
}

/** One attempt as BullMQ runs it: `attempt` counts from 1, `deliveryId` is the same for every attempt. */
export interface AttemptContext {
  attempt: number;
  deliveryId: string;
}

/**
 * One attempt of one webhook: POST `{code: 200, data: <unified task>}` (the body of GET /v1/tasks/<id>) signed
 * with the account's secret over `<timestamp>.<body>`, and record it. A 2xx ends the job; anything else throws so
 * BullMQ retries with exponential backoff; a refused (private) address or an expired webhook ends it for good.
 * An already successful delivery of the same webhook is never sent again.
 */
export class WebhookDeliveryHandler {
  constructor(private readonly d: WebhookDeliveryDeps) {}

  async deliver(data: WebhookJobData, ctx: AttemptContext): Promise<'delivered' | 'skipped'> {
    const target = await this.d.repo.target(data.taskId);
    if (!target || target.task.status !== data.event) return 'skipped';
    if (await this.d.repo.delivered(data.taskId, data.event)) return 'skipped';
    const now = (this.d.now ?? Date.now)();
    const { task, callbackUrl } = target;
    if (task.completedAt && now - task.completedAt.getTime() > this.d.maxAgeMs) {
      this.d.logger.warn({ taskId: task.id, event: data.event, attempt: ctx.attempt }, 'webhook given up: older than the retry horizon');
      throw new UnrecoverableError('webhook older than its retry horizon');
    }
    const { secret } = await this.d.repo.secretOf(task.accountId);
    const body = JSON.stringify({ code: 200, data: toUnifiedTask(task) });
    const timestamp = Math.floor(now / 1000);
    const r = await this.d.send(callbackUrl, body, {
      [WEBHOOK_HEADERS.signature]: signWebhook(secret, timestamp, body),
      [WEBHOOK_HEADERS.timestamp]: String(timestamp),
      [WEBHOOK_HEADERS.deliveryId]: ctx.deliveryId,
      [WEBHOOK_HEADERS.attempt]: String(ctx.attempt),
    });
    const succeeded = r.statusCode !== null && r.statusCode >= 200 && r.statusCode < 300;
    await this.d.repo.recordAttempt({
      accountId: task.accountId,
      taskId: task.id,
      event: data.event,
      deliveryId: ctx.deliveryId,
      attempt: ctx.attempt,
      url: callbackUrl,
      statusCode: r.statusCode,
      error: r.error,
      succeeded,
      durationMs: r.durationMs,
    });
    if (succeeded) {
      this.d.logger.info({ taskId: task.id, event: data.event, attempt: ctx.attempt, status: r.statusCode }, 'webhook delivered');
      return 'delivered';
    }
    const why = r.error ?? `HTTP ${r.statusCode}`;
    this.d.logger.warn({ taskId: task.id, event: data.event, attempt: ctx.attempt, why }, 'webhook attempt failed');
    if (r.error?.startsWith('refused')) throw new UnrecoverableError(`webhook ${why}`);
    throw new Error(`webhook attempt ${ctx.attempt} failed: ${why}`);
  }
}
