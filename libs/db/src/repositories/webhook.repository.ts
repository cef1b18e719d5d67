import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { rowsOf, type Row } from './sql';
import { TASK_COLUMNS, toTaskRecord, type TaskRecord } from './task.repository';

/** A terminal task with a callback_url: what its webhook delivery needs. */
export interface WebhookTarget {
  task: TaskRecord;
  callbackUrl: string;
}

/** One delivery attempt as the delivery worker records it. */
export interface WebhookAttempt {
  accountId: string;
  taskId: string;
  event: string;
  deliveryId: string;
  attempt: number;
  url: string;
  statusCode: number | null;
  error: string | null;
  succeeded: boolean;
  durationMs: number;
}

/** A recorded attempt as the account sees it (GET /api/webhooks/deliveries). */
export interface WebhookDeliveryRecord extends Omit<WebhookAttempt, 'accountId'> {
  id: string;
  createdAt: Date;
}

/** `whsec_` + 32 random bytes, base64url. */
const newSecret = (): string => `whsec_${randomBytes(32).toString('base64url')}`;

/** Webhook secrets, callback targets and the delivery log (docs/webhooks.md). */
export class WebhookRepository {
  constructor(private readonly ds: Pick<DataSource, 'query'>) {}

  /** The account's signing secret, created on first use (concurrent first uses agree on one). */
  async secretOf(accountId: string): Promise<{ secret: string; rotatedAt: Date }> {
    await this.ds.query(`INSERT INTO webhook_secrets (account_id, secret) VALUES ($1, $2) ON CONFLICT (account_id) DO NOTHING`, [accountId, newSecret()]);
    const rows: Row[] = await this.ds.query(`SELECT secret, rotated_at FROM webhook_secrets WHERE account_id = $1`, [accountId]);
    return { secret: rows[0].secret as string, rotatedAt: new Date(rows[0].rotated_at as string) };
  }

  /** Replaces the account's secret: deliveries signed from now on use the new one. */
  async rotateSecret(accountId: string): Promise<{ secret: string; rotatedAt: Date }> {
    const rows = rowsOf(
      await this.ds.query(
        `INSERT INTO webhook_secrets (account_id, secret) VALUES ($1, $2)
       ON CONFLICT (account_id) DO UPDATE SET secret = EXCLUDED.secret, rotated_at = now()
       RETURNING secret, rotated_at`,
        [accountId, newSecret()],
      ),
    );
    return { secret: rows[0].secret as string, rotatedAt: new Date(rows[0].rotated_at as string) };
  }

  /** The terminal task and its callback_url; null when the task has none, is missing, or is not terminal. */
  async target(taskId: string): Promise<WebhookTarget | null> {
    const rows: Row[] = await this.ds.query(
      `SELECT ${TASK_COLUMNS}, callback_url FROM tasks WHERE id = $1 AND callback_url IS NOT NULL AND status IN ('completed','failed')`,
      [taskId],
    );
    return rows[0] ? { task: toTaskRecord(rows[0]), callbackUrl: rows[0].callback_url as string } : null;
  }

  /** True when an attempt of this webhook already succeeded (a re-enqueued delivery then does nothing). */
  async delivered(taskId: string, event: string): Promise<boolean> {
    const rows: Row[] = await this.ds.query(`SELECT 1 FROM webhook_deliveries WHERE task_id = $1 AND event = $2 AND succeeded LIMIT 1`, [taskId, event]);
    return rows.length > 0;
  }

  /**
   * Webhooks Postgres says are owed: settled terminal tasks with a callback_url, ended between `withinMs` and
   * `olderThanMs` ago, whose current state has no successful delivery (the billing sweep re-enqueues those whose job
   * Redis no longer has). One keyset page after `afterId` in (completed_at, id) order, along the partial index
   * `tasks_callback_completed_idx` (callback tasks only): a page starts where the last one ended, so a whole walk
   * reads the window's callback tasks once. (It was id order over the completion index of every terminal task: each
   * page read and sorted the whole window — 105,639 rows for one page of the 24 h rebuild on a 10 M-task database,
   * scripts/explain-volume.ts.) `afterId` stays an id (forEachIdPage's contract): its completed_at is looked up.
   */
  async owedIds(olderThanMs: number, withinMs: number, limit: number, afterId?: string): Promise<Array<{ id: string; event: 'completed' | 'failed' }>> {
    const rows: Row[] = await this.ds.query(
      `SELECT t.id, t.status FROM tasks t
        WHERE t.callback_url IS NOT NULL AND t.settled_at IS NOT NULL AND t.status IN ('completed','failed')
          AND t.completed_at <= now() - ($1 || ' milliseconds')::interval
          AND t.completed_at > now() - ($2 || ' milliseconds')::interval
          AND ($4::text IS NULL OR (t.completed_at, t.id) > ((SELECT a.completed_at FROM tasks a WHERE a.id = $4::text), $4::text))
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.task_id = t.id AND d.event = t.status AND d.succeeded)
        ORDER BY t.completed_at, t.id LIMIT $3`,
      [String(olderThanMs), String(withinMs), limit, afterId ?? null],
    );
    return rows.map((r) => ({ id: r.id as string, event: r.status as 'completed' | 'failed' }));
  }

  async recordAttempt(a: WebhookAttempt): Promise<void> {
    await this.ds.query(
      `INSERT INTO webhook_deliveries (account_id, task_id, event, delivery_id, attempt, url, status_code, error, succeeded, duration_ms)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`,
      [a.accountId, a.taskId, a.event, a.deliveryId, a.attempt, a.url, a.statusCode, a.error, a.succeeded, a.durationMs],
    );
  }

  /** The account's attempts, newest first; `before` (an id from the previous page) pages back. */
  async listDeliveries(accountId: string, opts: { limit: number; before?: string; taskId?: string }): Promise<WebhookDeliveryRecord[]> {
    const rows: Row[] = await this.ds.query(
      `SELECT * FROM webhook_deliveries
       WHERE account_id = $1 AND ($2::bigint IS NULL OR id < $2::bigint) AND ($3::text IS NULL OR task_id = $3::text)
       ORDER BY id DESC LIMIT $4`,
      [accountId, opts.before ?? null, opts.taskId ?? null, opts.limit],
    );
    return rows.map((r) => ({
      id: String(r.id),
      taskId: r.task_id as string,
      event: r.event as string,
      deliveryId: r.delivery_id as string,
      attempt: Number(r.attempt),
      url: r.url as string,
      statusCode: r.status_code === null ? null : Number(r.status_code),
      error: (r.error as string | null) ?? null,
      succeeded: r.succeeded as boolean,
      durationMs: Number(r.duration_ms),
      createdAt: new Date(r.created_at as string),
    }));
  }
}
