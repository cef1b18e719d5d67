import { Joi, commonConfigOf, commonSchema, configLoader, env, type CommonEnv } from '@gmg/config';

interface BillingEnv extends CommonEnv {
  HEALTH_PORT: number;
  SETTLE_CONCURRENCY: number;
  SWEEP_INTERVAL_MS: number;
  UNSETTLED_AFTER_MS: number;
  WEBHOOK_CONCURRENCY: number;
  WEBHOOK_ALLOW_INSECURE: boolean;
  WEBHOOK_TIMEOUT_MS: number;
  WEBHOOK_MAX_RESPONSE_BYTES: number;
  WEBHOOK_ATTEMPTS: number;
  WEBHOOK_BACKOFF_MS: number;
  WEBHOOK_MAX_AGE_HOURS: number;
  TASK_RETENTION_DAYS: number;
  WEBHOOK_DELIVERY_RETENTION_DAYS: number;
  LEDGER_RETENTION_DAYS: number;
  RETENTION_PARALLEL: number;
}

const schema = Joi.object<BillingEnv>({
  ...commonSchema,
  HEALTH_PORT: env.port(9105),
  SETTLE_CONCURRENCY: env.positiveInt(20).max(1000),
  SWEEP_INTERVAL_MS: env.positiveInt(15_000).min(100),
  UNSETTLED_AFTER_MS: env.positiveInt(30_000),
  WEBHOOK_CONCURRENCY: env.positiveInt(20).max(1000),
  WEBHOOK_ALLOW_INSECURE: env.bool(false),
  WEBHOOK_TIMEOUT_MS: env.positiveInt(10_000).max(60_000),
  WEBHOOK_MAX_RESPONSE_BYTES: env.positiveInt(65_536).max(10 * 1024 * 1024),
  // 14 attempts from 10 s, doubling: the last retry ~22.7 h after the first attempt (the 24 h horizon).
  WEBHOOK_ATTEMPTS: env.positiveInt(14).max(50),
  WEBHOOK_BACKOFF_MS: env.positiveInt(10_000),
  WEBHOOK_MAX_AGE_HOURS: env.positiveInt(24).max(168),
  // retention (docs/operations.md, "Retention"); 0 keeps everything
  TASK_RETENTION_DAYS: env.int(0, 3650, 30),
  WEBHOOK_DELIVERY_RETENTION_DAYS: env.int(0, 3650, 14),
  // top-ups, adjustments and closed credit leases' entries (a task's entries leave with the task); a top-up's
  // Idempotency-Key is remembered this long
  LEDGER_RETENTION_DAYS: env.int(0, 3650, 400),
  // concurrent retention batches per table in one sweep (SKIP LOCKED: safe at any number; docs/operations.md, "Growth")
  RETENTION_PARALLEL: env.positiveInt(1).max(8),
});

// not annotated: its return type IS BillingConfig
function toConfig(e: Readonly<BillingEnv>) {
  return {
    /**
     * PG_POOL_MAX's default: a connection per concurrent settlement, the sweeper's and a scrape's, and one per extra
     * retention lane on each of its three tables (at most 30).
     */
    ...commonConfigOf(e, Math.min(30, e.SETTLE_CONCURRENCY + 2 + 3 * (e.RETENTION_PARALLEL - 1)), 'gmg-billing'),
    healthPort: e.HEALTH_PORT,
    /** Settlements (startBillingWorker's options but the shards). */
    settlements: {
      concurrency: e.SETTLE_CONCURRENCY,
      sweepIntervalMs: e.SWEEP_INTERVAL_MS,
      /** Terminal tasks without capture/release for this long are re-settled by the sweeper. */
      unsettledAfterMs: e.UNSETTLED_AFTER_MS,
      retention: {
        taskDays: e.TASK_RETENTION_DAYS,
        webhookDeliveryDays: e.WEBHOOK_DELIVERY_RETENTION_DAYS,
        ledgerDays: e.LEDGER_RETENTION_DAYS,
        parallel: e.RETENTION_PARALLEL,
      },
    },
    /** Webhook deliveries (docs/webhooks.md; startWebhookWorker's options but the shards). */
    webhooks: {
      concurrency: e.WEBHOOK_CONCURRENCY,
      /** Local mode: callbacks may go to loopback/private addresses. Never on in production. */
      allowInsecure: e.WEBHOOK_ALLOW_INSECURE,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      maxResponseBytes: e.WEBHOOK_MAX_RESPONSE_BYTES,
      attempts: e.WEBHOOK_ATTEMPTS,
      backoffMs: e.WEBHOOK_BACKOFF_MS,
      maxAgeMs: e.WEBHOOK_MAX_AGE_HOURS * 3600_000,
    },
  };
}

/** Billing's config from its environment (process.env unless given). Throws ConfigError listing every bad key. */
export const loadBillingConfig = configLoader(schema, toConfig);
