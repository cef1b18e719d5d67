import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { AccountEntity } from './entities/account.entity';
import { ApiKeyEntity } from './entities/api-key.entity';
import { ApiKeySpendEntity } from './entities/api-key-spend.entity';
import { ChannelEntity } from './entities/channel.entity';
import { ChannelKeyEntity } from './entities/channel-key.entity';
import { GroupEntity } from './entities/group.entity';
import { LedgerArchiveEntity, LedgerEntryEntity, LedgerTotalEntity } from './entities/ledger-entry.entity';
import { PriceEntity } from './entities/price.entity';
import { TaskArchiveEntity, TaskEntity } from './entities/task.entity';
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
import { SweepKeysetIndexes1765100000000 } from './migrations/1765100000000-sweep-keyset-indexes';
import { LedgerTotals1765100100000 } from './migrations/1765100100000-ledger-totals';
import { TaskRetention1765200000000 } from './migrations/1765200000000-task-retention';
import { LedgerArchive1765300000000 } from './migrations/1765300000000-ledger-archive';
import { ChannelModelMap1765400000000 } from './migrations/1765400000000-channel-model-map';
import { TasksHotUpdates1765500000000 } from './migrations/1765500000000-tasks-hot-updates';
import { ChannelKeys1765600000000 } from './migrations/1765600000000-channel-keys';
import { ChannelHealth1765600100000 } from './migrations/1765600100000-channel-health';
import { ApiKeyCaps1765637000000 } from './migrations/1765637000000-api-key-caps';
import { CallbackKeysetIndex1765700000000 } from './migrations/1765700000000-callback-keyset-index';
import { ChatCallFunctions1765760000000 } from './migrations/1765760000000-chat-call-functions';
import { UsageRollup1765800000000 } from './migrations/1765800000000-usage-rollup';
import { ConsoleListIndexes1765900000000 } from './migrations/1765900000000-console-list-indexes';
import { ChatCallWrite1766000000000 } from './migrations/1766000000000-chat-call-write';
import { UsageDailyEntity, UsageHourlyEntity, UsageRollupStateEntity } from './entities/usage.entity';

export const ENTITIES = [
  AccountEntity,
  ApiKeyEntity,
  ApiKeySpendEntity,
  AssetGroupEntity,
  AvatarAssetEntity,
  ChannelEntity,
  ChannelKeyEntity,
  CreditLeaseEntity,
  GroupEntity,
  LedgerArchiveEntity,
  LedgerEntryEntity,
  LedgerTotalEntity,
  PriceEntity,
  TaskArchiveEntity,
  TaskEntity,
  TaskInflightEntity,
  UsageDailyEntity,
  UsageHourlyEntity,
  UsageRollupStateEntity,
  WebhookDeliveryEntity,
  WebhookSecretEntity,
];
/** In order of their timestamps. A new migration is appended here. */
export const MIGRATIONS = [
  InitialSchema1763769600000,
  TaskSettledAt1763856000000,
  TaskIdempotencyKey1763942400000,
  Artgen1764028800000,
  AvatarAssets1764115200000,
  MessagesLease1764201600000,
  TaskIdempotencyFingerprint1764288000000,
  TopupIdempotency1764374400000,
  TaskRequestSummary1764547200000,
  DefaultGroupLimits1764633600000,
  TaskOrigin1764720000000,
  Webhooks1764979200000,
  TaskInflightCounter1765069200000,
  ChatCallLease1765080000000,
  SweepKeysetIndexes1765100000000,
  LedgerTotals1765100100000,
  TaskRetention1765200000000,
  LedgerArchive1765300000000,
  ChannelModelMap1765400000000,
  TasksHotUpdates1765500000000,
  ChannelKeys1765600000000,
  ChannelHealth1765600100000,
  ApiKeyCaps1765637000000,
  CallbackKeysetIndex1765700000000,
  ChatCallFunctions1765760000000,
  UsageRollup1765800000000,
  ConsoleListIndexes1765900000000,
  ChatCallWrite1766000000000,
];

export interface DbConfig {
  url: string;
  /** Pool size per process. */
  poolSize?: number;
  applicationName?: string;
  /** How long a query waits for a pooled (or new) connection; 0 would wait forever, so the default is 5 s. */
  connectTimeoutMs?: number;
  /** Server-side limits (0: off). Sent as start-up parameters: see sessionLimits for PgBouncer. */
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
  idleInTxTimeoutMs?: number;
}

/**
 * The server-side limits as node-postgres start-up parameters: direct to Postgres they apply to the session.
 * Through PgBouncer in transaction mode no session setting of a client may survive its transaction, so PgBouncer
 * ignores them (k8s/base/pgbouncer/pgbouncer.ini: ignore_startup_parameters) and sets the same limits on each server
 * connection it opens (`connect_query` of its databases entry), with its own query_timeout and
 * idle_transaction_timeout above them (docs/operations.md). No client-side `query_timeout`: node-postgres would
 * answer the caller but leave the statement running on a connection it hands to the next query.
 */
function sessionLimits(cfg: DbConfig): Record<string, number> {
  const limits: Record<string, number> = {};
  if (cfg.statementTimeoutMs) limits.statement_timeout = cfg.statementTimeoutMs;
  if (cfg.lockTimeoutMs) limits.lock_timeout = cfg.lockTimeoutMs;
  if (cfg.idleInTxTimeoutMs) limits.idle_in_transaction_session_timeout = cfg.idleInTxTimeoutMs;
  return limits;
}

/**
 * synchronize is off everywhere: the schema comes from migrations only. Every statement is an unnamed one
 * (TypeORM → node-postgres never names them), which PgBouncer's transaction pooling requires.
 */
export function createDataSource(cfg: DbConfig): DataSource {
  return new DataSource({
    type: 'postgres',
    url: cfg.url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    synchronize: false,
    migrationsRun: false,
    logging: false,
    extra: {
      max: cfg.poolSize ?? 10,
      application_name: cfg.applicationName ?? 'gmg',
      connectionTimeoutMillis: cfg.connectTimeoutMs ?? 5000,
      ...sessionLimits(cfg),
    },
  });
}

/**
 * A data source for the migration runner: the direct endpoint (MIGRATION_DATABASE_URL), no statement timeout (an
 * index built CONCURRENTLY may take an hour on a big table and must never be killed halfway), and a short lock
 * timeout so a DDL statement queued behind a long transaction fails and is retried instead of blocking every
 * query of the fleet behind its lock request (docs/operations.md, upgrade procedure).
 */
export function createMigrationDataSource(url: string, lockTimeoutMs = 5000): DataSource {
  const ds = createDataSource({ url, poolSize: 2, applicationName: 'gmg-migrate', lockTimeoutMs, connectTimeoutMs: 10_000 });
  // Explicitly none, whatever the role's default (ALTER ROLE … SET statement_timeout) says.
  Object.assign(ds.options, { extra: { ...(ds.options as { extra?: object }).extra, options: '-c statement_timeout=0' } });
  return ds;
}

/**
 * Applies pending migrations, each in its own transaction unless it declares `transaction = false`
 * (CREATE INDEX CONCURRENTLY cannot run inside one).
 */
export async function runMigrations(ds: DataSource): Promise<string[]> {
  const done = await ds.runMigrations({ transaction: 'each' });
  return done.map((m) => m.name);
}

/**
 * The migrations this build knows that the database has not applied yet (by name). A pod of a new release waits
 * until this is empty before it starts (its init container: `scripts/migrate.ts --wait`), so the migration Job
 * always runs before the Deployments roll.
 */
export async function pendingMigrations(ds: DataSource): Promise<string[]> {
  const known = ds.migrations.map((m) => m.name ?? m.constructor.name);
  const exists = (await ds.query(`SELECT to_regclass('migrations') IS NOT NULL AS ok`)) as Array<{ ok: boolean }>;
  if (!exists[0]?.ok) return known;
  const applied = new Set(((await ds.query('SELECT name FROM migrations')) as Array<{ name: string }>).map((r) => r.name));
  return known.filter((n) => !applied.has(n));
}
