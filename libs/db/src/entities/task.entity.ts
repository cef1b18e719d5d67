import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Pool, TaskError, TaskResult, TaskStatus } from '@gmg/contracts';

@Entity({ name: 'tasks' })
export class TaskEntity {
  /** `task_` + 24 random base62 characters: unguessable. */
  @PrimaryColumn({ type: 'text' }) id!: string;
  @Column({ type: 'uuid', name: 'account_id' }) accountId!: string;
  @Column({ type: 'uuid', name: 'api_key_id' }) apiKeyId!: string;
  /** Canonical model id. */
  @Column({ type: 'text' }) model!: string;
  /** What the client sent (may be an alias). */
  @Column({ type: 'text', name: 'requested_model' }) requestedModel!: string;
  @Column({ type: 'text' }) pool!: Pool;
  @Column({ type: 'text', default: 'pending' }) status!: TaskStatus;
  @Column({ type: 'integer', default: 0 }) progress!: number;
  /** The NormalizedRequest (upstream body, derived facts, billing items, expected output). */
  @Column({ type: 'jsonb' }) request!: Record<string, unknown>;
  /**
   * The request without its upstream body and billing lines: what every read but the submit step needs. A column
   * GENERATED ALWAYS by Postgres (migration 1764547200000); not declared as generated here, so TypeORM keeps no
   * metadata table of its own for it. Never written by the application.
   */
  @Column({ type: 'jsonb', insert: false, update: false }) summary!: Record<string, unknown>;
  /** Price held at submit, minor units: the snapshot the task is settled with. */
  @Column({ type: 'bigint' }) price!: string;
  /** Quote lines and ratio at submit. */
  @Column({ type: 'jsonb', name: 'price_snapshot' }) priceSnapshot!: Record<string, unknown>;
  @Column({ type: 'uuid', name: 'channel_id', nullable: true }) channelId!: string | null;
  /** The channel key that submitted it (its polls, cancel and downloads use it); null: the channel's own api_key. */
  @Column({ type: 'uuid', name: 'channel_key_id', nullable: true }) channelKeyId!: string | null;
  @Column({ type: 'text', name: 'upstream_task_id', nullable: true }) upstreamTaskId!: string | null;
  @Column({ type: 'jsonb', nullable: true }) result!: TaskResult | null;
  @Column({ type: 'jsonb', nullable: true }) error!: TaskError | null;
  @Column({ type: 'timestamptz', name: 'created_at', default: () => 'now()' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'started_at', nullable: true }) startedAt!: Date | null;
  @Column({ type: 'timestamptz', name: 'completed_at', nullable: true }) completedAt!: Date | null;
  /** After this instant a non-terminal task fails with `Task timeout`. */
  @Column({ type: 'timestamptz', name: 'deadline_at' }) deadlineAt!: Date;
  /** When the capture/release was written; null while unsettled (the settlement sweeper's index). */
  @Column({ type: 'timestamptz', name: 'settled_at', nullable: true }) settledAt!: Date | null;
  @Column({ type: 'timestamptz', name: 'updated_at', default: () => 'now()' }) updatedAt!: Date;
  /** The client's Idempotency-Key; unique per API key while kept (24 h). */
  @Column({ type: 'text', name: 'idempotency_key', nullable: true }) idempotencyKey!: string | null;
  /** Hash of the request that claimed the key (a different request under it is 422). */
  @Column({ type: 'text', name: 'idempotency_fingerprint', nullable: true }) idempotencyFingerprint!: string | null;
  /** What settlement captures when less than the hold (per-asset billing), minor units; null = the whole price. */
  @Column({ type: 'bigint', name: 'capture_amount', nullable: true }) captureAmount!: string | null;
  /** The upstream's own view of the task (art suite: native status, grid, URLs…); null for other tasks. */
  @Column({ type: 'jsonb', nullable: true }) native!: Record<string, unknown> | null;
  /** The edge's request id of the submission (X-Request-Id); null for tasks older than it. */
  @Column({ type: 'text', name: 'request_id', nullable: true }) requestId!: string | null;
  /** The OpenTelemetry trace id of the submission (X-Trace-Id); null when tracing was off. */
  @Column({ type: 'text', name: 'trace_id', nullable: true }) traceId!: string | null;
  /** Where the signed webhook goes at the terminal state (docs/webhooks.md); null: none. Not read by polls. */
  @Column({ type: 'text', name: 'callback_url', nullable: true }) callbackUrl!: string | null;
  /** The task_inflight row that counts it while open; null: not counted (a chat call, or written before the counter). */
  @Column({ type: 'integer', name: 'inflight_shard', nullable: true }) inflightShard!: number | null;
  /** A capped key's task: the spend period it was counted in (api_key_spend), so its refund goes back there. */
  @Column({ type: 'text', name: 'spend_period', nullable: true }) spendPeriod!: string | null;
  /** A chat call paid from a credit lease: the lease that settles it if its edge dies (docs/messages.md). */
  @Column({ type: 'text', name: 'lease_id', nullable: true }) leaseId!: string | null;
}

/**
 * An ended, settled task past TASK_RETENTION_DAYS, moved here by the retention (migration TaskRetention;
 * docs/operations.md, "Retention"): the whole `tasks` row as jsonb. Never read by the gateway.
 */
@Entity({ name: 'tasks_archive' })
export class TaskArchiveEntity {
  @PrimaryColumn({ type: 'text' }) id!: string;
  @Column({ type: 'uuid', name: 'account_id' }) accountId!: string;
  @Column({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'completed_at', nullable: true }) completedAt!: Date | null;
  @Column({ type: 'timestamptz', name: 'archived_at' }) archivedAt!: Date;
  @Column({ type: 'jsonb' }) task!: Record<string, unknown>;
}
