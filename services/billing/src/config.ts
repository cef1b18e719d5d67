import { Joi, commonSchema, env, loadConfig, type CommonEnv } from '@gmg/config';

export interface BillingConfig extends CommonEnv {
  HEALTH_PORT: number;
  SETTLE_CONCURRENCY: number;
  SWEEP_INTERVAL_MS: number;
  /** Terminal tasks without capture/release for this long are re-settled by the sweeper. */
  UNSETTLED_AFTER_MS: number;
  /** Webhook deliveries (docs/webhooks.md). */
  WEBHOOK_CONCURRENCY: number;
  /** Local mode: callbacks may go to loopback/private addresses. Never on in production. */
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

const schema = Joi.object<BillingConfig>({
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
  TASK_RETENTION_DAYS: Joi.number().integer().min(0).max(3650).default(30),
  WEBHOOK_DELIVERY_RETENTION_DAYS: Joi.number().integer().min(0).max(3650).default(14),
  // top-ups, adjustments and closed credit leases' entries (a task's entries leave with the task); a top-up's
  // Idempotency-Key is remembered this long
  LEDGER_RETENTION_DAYS: Joi.number().integer().min(0).max(3650).default(400),
  // concurrent retention batches per table in one sweep (SKIP LOCKED: safe at any number; docs/operations.md, "Growth")
  RETENTION_PARALLEL: env.positiveInt(1).max(8),
});

/**
 * PG_POOL_MAX's default: a connection per concurrent settlement, the sweeper's and a scrape's, and one per extra
 * retention lane on each of its three tables (at most 30).
 */
export const billingPoolDefault = (c: BillingConfig): number => Math.min(30, c.SETTLE_CONCURRENCY + 2 + 3 * ((c.RETENTION_PARALLEL ?? 1) - 1));

export function loadBillingConfig(source: NodeJS.ProcessEnv = process.env): Readonly<BillingConfig> {
  return loadConfig(schema, source);
}
