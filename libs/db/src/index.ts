export { createDataSource, createMigrationDataSource, pendingMigrations, runMigrations } from './data-source';
export { newTaskId, randomHex } from './ids';
export { forEachIdPage } from './id-pages';
export { costMinor, toUnifiedTask } from './unified-task';
export { TaskRepository, DuplicateSubmissionError, HOLD_MANY_SQL, HOLD_LEASED_SQL, toHoldRow, spendCapError } from './repositories/task.repository';
export { HoldBatchingTaskRepository } from './repositories/hold-batcher';
export { StatementBatcher, type Pending } from './statement-batcher';
export { TaskLeaseBook, type IdleLeases } from './repositories/task-lease.book';
export { LeaseBookCore } from './repositories/lease-book.core';
export type { TaskRecord, NewTask, AvatarBatch, CancelOutcome } from './repositories/task.repository';
export { TaskRecoveryRepository } from './repositories/task-recovery.repository';
export { RetentionRepository, type RetentionPolicy } from './repositories/retention.repository';
export { WebhookRepository } from './repositories/webhook.repository';
export type { WebhookDeliveryRecord } from './repositories/webhook.repository';
export { settle, settleMany, settleTask, MAX_SETTLE_BATCH } from './repositories/ledger.repository';
export type { SettleOutcome } from './repositories/ledger.repository';
export { AccountRepository } from './repositories/account.repository';
export type { AccountRecord } from './repositories/account.repository';
export { ApiKeyRepository } from './repositories/api-key.repository';
export type { ApiKeyRecord, AuthPrincipal, KeyCapsPatch } from './repositories/api-key.repository';
export { ChannelRepository } from './repositories/channel.repository';
export { ChannelGroupResolver } from './repositories/channel-group.repository';
export type { ChannelRecord, ChannelWithSecret, ChannelInput } from './repositories/channel.repository';
export { PriceRepository } from './repositories/price.repository';
export type { PriceRecord } from './repositories/price.repository';
export { GroupRepository } from './repositories/group.repository';
export type { GroupRecord } from './repositories/group.repository';
export { seedDemo, loadPrices } from './seed';
export { AssetRepository, newAssetId } from './repositories/asset.repository';
export type { AssetRecord, AssetReview, AssetStatus, AssetListQuery, UsableAsset } from './repositories/asset.repository';
export { AssetGroupRepository, newAssetGroupId } from './repositories/asset-group.repository';
export type { AssetGroupRecord } from './repositories/asset-group.repository';
export { ChatCallRepository } from './repositories/chat-call.repository';
export type { ChatSettlement, MessagesChannel } from './repositories/chat-call.repository';
export { CreditLeaseRepository } from './repositories/credit-lease.repository';
export type { LeasedCall, OpenedCall } from './repositories/credit-lease.repository';
export { LogsRepository } from './repositories/logs.repository';
export { pingDatabase } from './ping-database';
export type { ActivityRecord, TaskLedgerRecord } from './repositories/logs.repository';
export { OpsStatsRepository } from './repositories/ops-stats.repository';
export { ChannelKeyRepository } from './repositories/channel-key.repository';
export type { ChannelKeyRecord, HealthRecord, HealthStatus, KeyInput } from './repositories/channel-key.repository';
export { ChannelHealthRepository } from './repositories/channel-health.repository';
export type { BackOff, ProbeClaim } from './repositories/channel-health.repository';
export { exportArchives } from './repositories/archive-export';
export type { S3ArchiveTarget } from './repositories/archive-s3';
/**
 * An S3 archive target, its module (and the AWS SDK) loaded on first use: every service imports @gmg/db, and the SDK
 * at start-up costs each of them ~8 MB of resident memory (the edge's budget: docs/benchmarks.md, "ceiling").
 */
export async function createS3ArchiveTarget(
  opts: import('./repositories/archive-s3').S3ArchiveTargetOptions,
): Promise<import('./repositories/archive-s3').S3ArchiveTarget> {
  const { S3ArchiveTarget } = await import('./repositories/archive-s3');
  return new S3ArchiveTarget(opts);
}
export { UsageRepository, USAGE_DIMENSIONS, USAGE_HOURLY_MAX_DAYS, NO_CHANNEL, usageRange } from './repositories/usage.repository';
export type { UsageDimension, UsageGroup } from './repositories/usage.repository';
export { ConsoleListRepository, LIST_SCAN_BUDGET } from './repositories/console-list.repository';
export type { ListPage, ListPosition, ListedTask, TaskEntryRecord, TaskListFilter } from './repositories/console-list.repository';
