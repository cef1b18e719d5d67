import Joi from 'joi';
import { MAX_QUEUE_SHARDS, SHARDED_QUEUES, type ShardedQueue } from '@gmg/contracts';
import { env } from './env';
import { redisTargetOf, redisTopologySchema, type RedisEnv, type RedisTarget } from './redis';

export { Joi, env };

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid environment:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type EnvSource = NodeJS.ProcessEnv | Record<string, string | undefined>;

/**
 * Parses an environment into a typed, frozen config. Every bad key is reported at once.
 * Only a service's config.ts calls this (through configLoader); libraries take the resulting objects.
 */
export function loadConfig<T>(schema: Joi.ObjectSchema<T>, env: EnvSource): Readonly<T> {
  // not destructured: Joi types a failed result's `value` as `any`; narrowed on `error`, `value` is a T
  const result = schema.validate(env, { abortEarly: false, allowUnknown: true, stripUnknown: true, convert: true });
  if (result.error) throw new ConfigError(result.error.details.map((d) => `${d.path.join('.')}: ${d.message.replace(/"/g, '')}`));
  return deepFreeze(result.value);
}

/**
 * The one way a service reads its configuration: its environment checked against `schema` (the names, defaults and
 * bounds, defined once), then mapped by `toConfig` into the service's camelCase config, frozen. Every service's
 * config.ts makes its loader with this; tests pass their own environment, a service's main none (process.env).
 */
export function configLoader<E, C>(schema: Joi.ObjectSchema<E>, toConfig: (e: Readonly<E>) => C): ConfigLoader<C> {
  // the checked environment is frozen through; the mapped config at its top (what it builds for clients, e.g. the
  // Redis target, stays as the client libraries get it)
  const load = (source: EnvSource = process.env) => Object.freeze(toConfig(loadConfig(schema, source)));
  return Object.assign(load, { variables: Object.freeze(Object.keys((schema.describe() as { keys: object }).keys)) });
}

export interface ConfigLoader<C> {
  (source?: EnvSource): Readonly<C>;
  /** The environment variables it reads (docs/configuration.md lists each: test/docs/configuration.test.ts). */
  readonly variables: readonly string[];
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    Object.values(o as Record<string, unknown>).forEach(deepFreeze);
    Object.freeze(o);
  }
  return o;
}

/** The environment every gateway service shares (upstream-sim excepted). */
export interface CommonEnv extends RedisEnv {
  DATABASE_URL: string;
  LOG_LEVEL: string;
  /** Log lines buffered at most this long before they are written (0: each line at once). */
  LOG_FLUSH_MS: number;
  REDIS_REQUIRE_NOEVICTION: boolean;
  /** Inside every Redis key's hash tag (`{<prefix>:...}`); renaming it strands queued jobs until the rebuild. */
  QUEUE_PREFIX: string;
  /**
   * Queue shards per pool and for billing's two queues (QUEUE_SHARDS `image=2,video=2,billing=2,webhook=2`; a queue
   * not named has 1). A task's jobs go to shard shardOf(task id, K) of each queue (libs/queue keys.ts).
   */
  QUEUE_SHARDS: Readonly<Record<ShardedQueue, number>>;
  /** OTLP/HTTP collector base URL; spans are exported to `<it>/v1/traces`. Unset: tracing off (issue 12). */
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;
  /** Direct Postgres endpoint for migrations (never PgBouncer's transaction pool); unset: DATABASE_URL. */
  MIGRATION_DATABASE_URL?: string;
  /** Connections of this process's pool; unset: the service's own default (postgresOptions). */
  PG_POOL_MAX?: number;
  /** How long a query waits for a pooled connection (or a new one) before it fails; never forever. */
  PG_CONNECT_TIMEOUT_MS: number;
  PG_STATEMENT_TIMEOUT_MS: number;
  PG_LOCK_TIMEOUT_MS: number;
  PG_IDLE_IN_TX_TIMEOUT_MS: number;
}

const oneShardEach = (): Record<ShardedQueue, number> => Object.fromEntries(SHARDED_QUEUES.map((q) => [q, 1])) as Record<ShardedQueue, number>;

/** Builds the common part of every service's config: Postgres, Redis, logging, Redis policy check, queue prefix. */
export const commonSchema = {
  DATABASE_URL: env.databaseUrl(),
  REDIS_URL: env.redisUrl(),
  LOG_LEVEL: env.logLevel(),
  LOG_FLUSH_MS: env.logFlushMs(),
  /** Refuse to start when Redis may evict queue keys (maxmemory-policy other than noeviction). */
  REDIS_REQUIRE_NOEVICTION: env.bool(false),
  ...redisTopologySchema,
  // no braces: the gateway puts the prefix inside each key's hash tag itself (libs/queue keys.ts)
  QUEUE_PREFIX: Joi.string()
    .pattern(/^[A-Za-z0-9_:.-]+$/)
    .max(64)
    .default('gmg')
    .messages({ 'string.pattern.base': 'QUEUE_PREFIX may hold letters, digits and _ : . - only (no braces: every key already carries a hash tag)' }),
  QUEUE_SHARDS: Joi.string()
    .empty('')
    .default(() => oneShardEach())
    .custom((v: string, h) => {
      const out = oneShardEach();
      for (const item of v ? v.split(',') : []) {
        const m = /^\s*([a-z]+)\s*=\s*(\d+)\s*$/.exec(item);
        if (!m || !(SHARDED_QUEUES as readonly string[]).includes(m[1]!) || Number(m[2]) < 1 || Number(m[2]) > MAX_QUEUE_SHARDS) {
          return h.message(
            {
              custom: `must be queue=count pairs (queues ${SHARDED_QUEUES.join(', ')}; counts 1 to ${MAX_QUEUE_SHARDS}), e.g. image=2,video=2,billing=2; got {{#item}}`,
            },
            { item },
          );
        }
        out[m[1] as ShardedQueue] = Number(m[2]);
      }
      return out;
    }),
  OTEL_EXPORTER_OTLP_ENDPOINT: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .empty(''),
  MIGRATION_DATABASE_URL: Joi.string()
    .uri({ scheme: ['postgres', 'postgresql'] })
    .empty(''),
  PG_POOL_MAX: Joi.number().integer().min(1).max(500).empty(''),
  PG_CONNECT_TIMEOUT_MS: env.int(100, 120_000, 5000),
  // 0 turns a timeout off; the defaults are documented in README.md and docs/operations.md (connection budget).
  PG_STATEMENT_TIMEOUT_MS: env.int(0, 3_600_000, 30_000),
  PG_LOCK_TIMEOUT_MS: env.int(0, 3_600_000, 10_000),
  PG_IDLE_IN_TX_TIMEOUT_MS: env.int(0, 3_600_000, 60_000),
};

/** What a service hands to `createDataSource` (@gmg/db's DbConfig has the same shape). */
export interface PostgresOptions {
  url: string;
  poolSize: number;
  applicationName: string;
  connectTimeoutMs: number;
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  idleInTxTimeoutMs: number;
}

/** The Postgres part of a service's environment; `defaultPoolMax` is the service's own default for PG_POOL_MAX. */
function postgresOptions(e: CommonEnv, defaultPoolMax: number, applicationName: string): PostgresOptions {
  return {
    url: e.DATABASE_URL,
    poolSize: e.PG_POOL_MAX ?? defaultPoolMax,
    applicationName,
    connectTimeoutMs: e.PG_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: e.PG_STATEMENT_TIMEOUT_MS,
    lockTimeoutMs: e.PG_LOCK_TIMEOUT_MS,
    idleInTxTimeoutMs: e.PG_IDLE_IN_TX_TIMEOUT_MS,
  };
}

/** The part of the config every gateway service shares (upstream-sim excepted), from its CommonEnv. */
export interface CommonConfig {
  logLevel: string;
  /** Log lines buffered at most this long (0: each line written at once). */
  logFlushMs: number;
  /** OTLP/HTTP collector base URL; unset: tracing off. */
  otlpEndpoint?: string;
  /** Postgres: DATABASE_URL (PgBouncer in production), pool size and timeouts (PG_*). */
  postgres: PostgresOptions;
  redisUrl: string;
  /** Where Redis is: REDIS_URL, or REDIS_CLUSTER_NODES, or REDIS_SENTINELS + REDIS_SENTINEL_MASTER. */
  redis: RedisTarget;
  redisRequireNoeviction: boolean;
  /** BullMQ key prefix; also prefixes the Redis task view. */
  queuePrefix: string;
  /** Queue shards (QUEUE_SHARDS): a task's jobs go to shard shardOf(task id, K) of each queue. */
  queueShards: Readonly<Record<ShardedQueue, number>>;
}

/** The common part of a service's config; `defaultPoolMax` is the service's own default for PG_POOL_MAX. */
export function commonConfigOf(e: Readonly<CommonEnv>, defaultPoolMax: number, applicationName: string): CommonConfig {
  return {
    logLevel: e.LOG_LEVEL,
    logFlushMs: e.LOG_FLUSH_MS,
    otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT,
    postgres: postgresOptions(e, defaultPoolMax, applicationName),
    redisUrl: e.REDIS_URL,
    redis: redisTargetOf(e),
    redisRequireNoeviction: e.REDIS_REQUIRE_NOEVICTION,
    queuePrefix: e.QUEUE_PREFIX,
    queueShards: e.QUEUE_SHARDS,
  };
}

export { REDIS_LIMIT_DEFAULTS, redisTargetOf } from './redis';
export type { RedisLimits, RedisTarget, RedisEnv } from './redis';
export { SERVICE_NODE_FLAGS, serviceBundlePath, serviceNodeArgs } from './runtime';
export { resultStoreSchema } from './result-store';
export type { ResultStoreEnv } from './result-store';
export { upstreamCallbackSchema, upstreamCallbackWorkerSchema } from './upstream-callbacks';
export type { UpstreamCallbackEnv, UpstreamCallbackWorkerEnv } from './upstream-callbacks';
