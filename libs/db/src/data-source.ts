import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { AccountEntity } from './entities/account.entity';
import { ApiKeyEntity } from './entities/api-key.entity';
import { ChannelEntity } from './entities/channel.entity';
import { GroupEntity } from './entities/group.entity';
import { LedgerEntryEntity } from './entities/ledger-entry.entity';
import { PriceEntity } from './entities/price.entity';
import { TaskEntity } from './entities/task.entity';
import { TaskInflightEntity } from './entities/task-inflight.entity';
import { AssetGroupEntity } from './entities/asset-group.entity';
import { AvatarAssetEntity } from './entities/avatar-asset.entity';
import { CreditLeaseEntity } from './entities/credit-lease.entity';
import { WebhookDeliveryEntity, WebhookSecretEntity } from './entities/webhook.entity';
import { InitialSchema1763769600000 } from './migrations/1763769600000-initial-schema';
import { TaskSettledAt1763856000000 } from './migrations/1763856000000-task-settled-at';
import { TaskIdempotencyKey1763942400000 } from './migrations/1763942400000-task-idempotency-key';
import { Artgen1764028800000 } from './migrations/1764028800000-artgen';
import { AvatarAssets1764115200000 } from './migrations/1764115200000-avatar-assets';
import { MessagesLease1764201600000 } from './migrations/1764201600000-messages-lease';
import { TaskIdempotencyFingerprint1764288000000 } from './migrations/1764288000000-task-idempotency-fingerprint';
import { TopupIdempotency1764374400000 } from './migrations/1764374400000-topup-idempotency';
import { TaskRequestSummary1764547200000 } from './migrations/1764547200000-task-request-summary';
import { DefaultGroupLimits1764633600000 } from './migrations/1764633600000-default-group-limits';
import { TaskOrigin1764720000000 } from './migrations/1764720000000-task-origin';
import { Webhooks1764979200000 } from './migrations/1764979200000-webhooks';
import { TaskInflightCounter1765069200000 } from './migrations/1765069200000-task-inflight-counter';
import { ChatCallLease1765080000000 } from './migrations/1765080000000-chat-call-lease';

export const ENTITIES = [
  AccountEntity, ApiKeyEntity, AssetGroupEntity, AvatarAssetEntity, ChannelEntity, CreditLeaseEntity, GroupEntity,
  LedgerEntryEntity, PriceEntity, TaskEntity, TaskInflightEntity, WebhookDeliveryEntity, WebhookSecretEntity,
];
/** In order of their timestamps. A new migration is appended here. */
export const MIGRATIONS = [
  InitialSchema1763769600000, TaskSettledAt1763856000000, TaskIdempotencyKey1763942400000, Artgen1764028800000,
  AvatarAssets1764115200000, MessagesLease1764201600000, TaskIdempotencyFingerprint1764288000000, TopupIdempotency1764374400000,
  TaskRequestSummary1764547200000,
  DefaultGroupLimits1764633600000,
  TaskOrigin1764720000000,
  Webhooks1764979200000,
  TaskInflightCounter1765069200000,
  ChatCallLease1765080000000,
];

export interface DbConfig {
  url: string;
  /** Pool size per process. */
  poolSize?: number;
  applicationName?: string;
}

/** synchronize is off everywhere: the schema comes from migrations only. */
export function createDataSource(cfg: DbConfig): DataSource {
  return new DataSource({
    type: 'postgres',
    url: cfg.url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    synchronize: false,
    migrationsRun: false,
    logging: false,
    extra: { max: cfg.poolSize ?? 10, application_name: cfg.applicationName ?? 'gmg' },
  });
}

export async function runMigrations(ds: DataSource): Promise<string[]> {
  const done = await ds.runMigrations({ transaction: 'each' });
  return done.map((m) => m.name);
}
