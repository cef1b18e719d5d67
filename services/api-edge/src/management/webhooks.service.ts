import Joi from 'joi';
import type { DataSource } from 'typeorm';
import { WebhookRepository, type WebhookDeliveryRecord } from '@gmg/db';
import { validate } from './management.schemas';

const deliveriesQuerySchema = Joi.object({
  limit: Joi.number().integer().min(1).max(100).default(20),
  /** The `next_cursor` of the previous page. */
  cursor: Joi.string().pattern(/^[0-9]{1,19}$/),
  task_id: Joi.string().pattern(/^task_[0-9A-Za-z]{1,64}$/),
});

export interface WebhookSecretView {
  secret: string;
  rotated_at: number;
}

export interface DeliveryView {
  id: string;
  task_id: string;
  event: string;
  delivery_id: string;
  attempt: number;
  url: string;
  status_code: number | null;
  error: string | null;
  succeeded: boolean;
  duration_ms: number;
  time: number;
}

const secs = (d: Date): number => Math.floor(d.getTime() / 1000);

const deliveryView = (d: WebhookDeliveryRecord): DeliveryView => ({
  id: d.id,
  task_id: d.taskId,
  event: d.event,
  delivery_id: d.deliveryId,
  attempt: d.attempt,
  url: d.url,
  status_code: d.statusCode,
  error: d.error,
  succeeded: d.succeeded,
  duration_ms: d.durationMs,
  time: secs(d.createdAt),
});

/** The caller's webhook secret and delivery log (docs/webhooks.md); always the caller's own account. */
export class WebhooksService {
  private readonly repo: WebhookRepository;

  constructor(ds: DataSource) {
    this.repo = new WebhookRepository(ds);
  }

  /** Read (created on first read). */
  async secret(accountId: string): Promise<WebhookSecretView> {
    const s = await this.repo.secretOf(accountId);
    return { secret: s.secret, rotated_at: secs(s.rotatedAt) };
  }

  async rotate(accountId: string): Promise<WebhookSecretView> {
    const s = await this.repo.rotateSecret(accountId);
    return { secret: s.secret, rotated_at: secs(s.rotatedAt) };
  }

  /** Newest first; `next_cursor` pages back, null on the last page. */
  async deliveries(accountId: string, query: unknown): Promise<{ items: DeliveryView[]; next_cursor: string | null }> {
    const q = validate<{ limit: number; cursor?: string; task_id?: string }>(deliveriesQuerySchema, query, 'query');
    const rows = await this.repo.listDeliveries(accountId, { limit: q.limit + 1, before: q.cursor, taskId: q.task_id });
    const page = rows.slice(0, q.limit);
    return { items: page.map(deliveryView), next_cursor: rows.length > q.limit ? page[page.length - 1].id : null };
  }
}
