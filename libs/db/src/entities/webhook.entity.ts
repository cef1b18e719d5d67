import { Column, CreateDateColumn, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';

/** The per-account webhook signing secret. Kept readable (HMAC needs it), never selected by default. */
@Entity({ name: 'webhook_secrets' })
export class WebhookSecretEntity {
  @PrimaryColumn({ type: 'uuid', name: 'account_id' }) accountId!: string;
  @Column({ type: 'text', select: false }) secret!: string;
  @Column({ type: 'timestamptz', name: 'created_at', default: () => 'now()' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'rotated_at', default: () => 'now()' }) rotatedAt!: Date;
}

/** One delivery attempt of one webhook (append-only), listed to the account at GET /api/webhooks/deliveries. */
@Entity({ name: 'webhook_deliveries' })
export class WebhookDeliveryEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id!: string;
  @Column({ type: 'uuid', name: 'account_id' }) accountId!: string;
  @Column({ type: 'text', name: 'task_id' }) taskId!: string;
  /** The terminal status announced: `completed` or `failed`. */
  @Column({ type: 'text' }) event!: string;
  /** Stable across the attempts of one webhook (the X-Delivery-Id header): receivers deduplicate on it. */
  @Column({ type: 'text', name: 'delivery_id' }) deliveryId!: string;
  @Column({ type: 'integer' }) attempt!: number;
  @Column({ type: 'text' }) url!: string;
  @Column({ type: 'integer', name: 'status_code', nullable: true }) statusCode!: number | null;
  @Column({ type: 'text', nullable: true }) error!: string | null;
  @Column({ type: 'boolean' }) succeeded!: boolean;
  @Column({ type: 'integer', name: 'duration_ms' }) durationMs!: number;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
}
