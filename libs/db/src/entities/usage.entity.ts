import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * One bucket of usage (migration UsageRollup1765800000000): settled tasks and chat calls of one (account, key, model,
 * channel) in one UTC hour (`usage_hourly`) or day (`usage_daily`), written by UsageRepository.rollup only.
 */
abstract class UsageBucketColumns {
  /** The hour's or the day's start (UTC). */
  @PrimaryColumn({ type: 'timestamptz' }) bucket!: Date;
  @PrimaryColumn({ type: 'uuid', name: 'account_id' }) accountId!: string;
  @PrimaryColumn({ type: 'uuid', name: 'api_key_id' }) apiKeyId!: string;
  @PrimaryColumn({ type: 'text' }) model!: string;
  /** The zero uuid: no channel served it. */
  @PrimaryColumn({ type: 'uuid', name: 'channel_id' }) channelId!: string;
  @Column({ type: 'integer', default: 0 }) tasks!: number;
  @Column({ type: 'integer', name: 'task_failures', default: 0 }) taskFailures!: number;
  @Column({ type: 'integer', name: 'chat_calls', default: 0 }) chatCalls!: number;
  @Column({ type: 'integer', name: 'chat_failures', default: 0 }) chatFailures!: number;
  /** What the ledger captured for them, minor units. */
  @Column({ type: 'bigint', default: 0 }) spend!: string;
  /** Sparse duration histogram, each element `bucket << 32 | count`; chat calls' buckets from 64 (usage.repository.ts, BUCKET_SQL). */
  @Column({ type: 'bigint', array: true, default: '{}' }) ms!: string[];
}

@Entity({ name: 'usage_hourly' })
export class UsageHourlyEntity extends UsageBucketColumns {}

@Entity({ name: 'usage_daily' })
export class UsageDailyEntity extends UsageBucketColumns {}

/** The rollup's watermark: the last task rolled up, in (settled_at, id) order. One row (id 1). */
@Entity({ name: 'usage_rollup_state' })
export class UsageRollupStateEntity {
  @PrimaryColumn({ type: 'integer' }) id!: number;
  @Column({ type: 'timestamptz', name: 'settled_at' }) settledAt!: Date;
  @Column({ type: 'text', name: 'task_id' }) taskId!: string;
  @Column({ type: 'timestamptz', name: 'updated_at', default: () => 'now()' }) updatedAt!: Date;
}
