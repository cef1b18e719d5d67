import 'reflect-metadata';
import { fromMinor } from '@gmg/contracts';
import { OpsStatsRepository, createDataSource, pingDatabase } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { collectProcessMetrics, reportMoney, startTracing } from '@gmg/observability';
import { checkRedisMemory, checkRedisPolicy, checkRedisReady, createRedis, onShutdownSignals, startHealthServer } from '@gmg/queue';
import { startBillingWorker, type BillingWorker } from './billing-worker';
import { startWebhookWorker, type WebhookWorker } from './webhooks/webhook-worker';
import { loadBillingConfig } from './config';

async function main(): Promise<void> {
  const config = loadBillingConfig();
  const logger = createLogger({ service: 'billing', level: config.logLevel, flushMs: config.logFlushMs });
  const tracing = startTracing({ service: 'billing', endpoint: config.otlpEndpoint });
  collectProcessMetrics('billing');
  const ds = createDataSource(config.postgres);
  await ds.initialize();
  const redis = createRedis(config.redis, 'worker');
  await checkRedisPolicy(redis, config.redisRequireNoeviction, (msg) => logger.warn(msg));
  // The health server answers before any long start-up work (the keeper's first check may rebuild settlements and
  // webhooks from Postgres after a Redis loss): live meanwhile, not ready until both workers have started (issue 38).
  const started: { billing?: BillingWorker; webhooks?: WebhookWorker } = {};
  let draining = false;
  const health = await startHealthServer({
    port: config.healthPort,
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
  const webhooks = startWebhookWorker({ ds, redis, prefix: config.queuePrefix, logger }, { ...config.webhooks, shards: config.queueShards.webhook });
  if (config.webhooks.allowInsecure) logger.warn('WEBHOOK_ALLOW_INSECURE is on: webhooks may call loopback and private addresses (local mode only)');
  started.webhooks = webhooks;
  const billing = await startBillingWorker(
    { ds, redis, prefix: config.queuePrefix, logger, webhooks: webhooks.queues },
    { ...config.settlements, shards: config.queueShards.billing, webhookMaxAgeMs: config.webhooks.maxAgeMs },
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
