import 'reflect-metadata';
import { postgresOptions } from '@gmg/config';
import { fromMinor } from '@gmg/contracts';
import { OpsStatsRepository, createDataSource, pingDatabase } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { collectProcessMetrics, reportMoney, startTracing } from '@gmg/observability';
import { redisTargetOf } from '@gmg/config';
import { checkRedisMemory, checkRedisPolicy, checkRedisReady, createRedis, onShutdownSignals, startHealthServer } from '@gmg/queue';
import { startBillingWorker, type BillingWorker } from './billing-worker';
import { startWebhookWorker, type WebhookWorker } from './webhooks/webhook-worker';
import { billingPoolDefault, loadBillingConfig } from './config';

async function main(): Promise<void> {
  const config = loadBillingConfig();
  const logger = createLogger({ service: 'billing', level: config.LOG_LEVEL, flushMs: config.LOG_FLUSH_MS });
  const tracing = startTracing({ service: 'billing', endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT });
  collectProcessMetrics('billing');
  const ds = createDataSource(postgresOptions(config, billingPoolDefault(config), 'gmg-billing'));
  await ds.initialize();
  const redis = createRedis(redisTargetOf(config), 'worker');
  await checkRedisPolicy(redis, config.REDIS_REQUIRE_NOEVICTION, (msg) => logger.warn(msg));
  // The health server answers before any long start-up work (the keeper's first check may rebuild settlements and
  // webhooks from Postgres after a Redis loss): live meanwhile, not ready until both workers have started (issue 38).
  const started: { billing?: BillingWorker; webhooks?: WebhookWorker } = {};
  let draining = false;
  const health = await startHealthServer({
    port: config.HEALTH_PORT,
    checks: { redis: () => checkRedisReady(redis) },
    degradable: { postgres: () => pingDatabase(ds), redis_memory: () => checkRedisMemory(redis) },
    liveness: {
      settlements: () => draining || !started.billing || started.billing.workers.every((w) => w.isRunning()),
      webhooks: () => draining || !started.webhooks || started.webhooks.workers.every((w) => w.isRunning()),
      redis: () => redis.status !== 'end',
    },
    isStarting: () => !started.billing,
    isDraining: () => draining,
    onCheckFailed: (probe, err) => logger.warn({ probe, err: err.message }, 'readiness probe failed'),
  });
  logger.info({ healthPort: health.port }, 'health server up; starting billing');
  const webhooks = startWebhookWorker(
    { ds, redis, prefix: config.QUEUE_PREFIX, logger },
    {
      concurrency: config.WEBHOOK_CONCURRENCY,
      allowInsecure: config.WEBHOOK_ALLOW_INSECURE,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      maxResponseBytes: config.WEBHOOK_MAX_RESPONSE_BYTES,
      attempts: config.WEBHOOK_ATTEMPTS,
      backoffMs: config.WEBHOOK_BACKOFF_MS,
      maxAgeMs: config.WEBHOOK_MAX_AGE_HOURS * 3600_000,
      shards: config.QUEUE_SHARDS.webhook,
    },
  );
  if (config.WEBHOOK_ALLOW_INSECURE) logger.warn('WEBHOOK_ALLOW_INSECURE is on: webhooks may call loopback and private addresses (local mode only)');
  started.webhooks = webhooks;
  const billing = await startBillingWorker(
    { ds, redis, prefix: config.QUEUE_PREFIX, logger, webhooks: webhooks.queues },
    {
      concurrency: config.SETTLE_CONCURRENCY,
      shards: config.QUEUE_SHARDS.billing,
      sweepIntervalMs: config.SWEEP_INTERVAL_MS,
      unsettledAfterMs: config.UNSETTLED_AFTER_MS,
      retention: {
        taskDays: config.TASK_RETENTION_DAYS,
        webhookDeliveryDays: config.WEBHOOK_DELIVERY_RETENTION_DAYS,
        ledgerDays: config.LEDGER_RETENTION_DAYS,
        parallel: config.RETENTION_PARALLEL,
      },
      webhookMaxAgeMs: config.WEBHOOK_MAX_AGE_HOURS * 3600_000,
    },
  );
  started.billing = billing;
  const stats = new OpsStatsRepository(ds);
  reportMoney(async () => {
    const m = await stats.money();
    return { ...m, ledgerUnits: Object.fromEntries(Object.entries(m.ledgerMinor).map(([k, v]) => [k, fromMinor(v)])) };
  });
  logger.info({ healthPort: health.port }, 'billing ready');
  onShutdownSignals(
    async () => {
      draining = true;
      await billing.close();
      await webhooks.close();
      await health.close();
      await redis.quit();
      await ds.destroy();
      await tracing.shutdown();
      logger.info('billing stopped');
    },
    { log: (msg, err) => logger.info({ err: (err as Error | undefined)?.message }, msg) },
  );
}

main().catch((e: unknown) => {
  console.error('billing failed to start:', e instanceof Error ? e.message : e);
  process.exit(1);
});
