import type { Pool } from '@gmg/contracts';
import type { DataSource } from 'typeorm';
import { postgresOptions } from '@gmg/config';
import { createDataSource, pingDatabase } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { collectProcessMetrics, startTracing } from '@gmg/observability';
import { redisTargetOf } from '@gmg/config';
import {
  WORKER_MIN_COMMAND_TIMEOUT_MS,
  checkRedisMemory,
  checkRedisPolicy,
  checkRedisReady,
  createRedis,
  onShutdownSignals,
  startHealthServer,
} from '@gmg/queue';
import {
  PublicHostResolver,
  closeChannelDispatchers,
  createCallbackLinks,
  createMediaKeeper,
  createResultLinks,
  createResultStore,
  createUpstreamAdapters,
  type ClosableMediaKeeper,
  type QuadrantCutter,
} from '@gmg/upstream';
import type { PoolWorkerConfig } from './pool-worker.config';
import { startPoolWorker, type PoolWorker, type PoolWorkerOptions } from './pool-worker';
import type { CompletionHandler } from './task-lifecycle';

export interface PoolWorkerServiceOptions {
  /** Builds the pool's completion step on the service's data source (worker-avatar: per-asset review). */
  completion?: (ds: DataSource) => CompletionHandler;
  /** The image library's quadrant cutter (worker-artgen: mj-proxy grids without tile links; see QuadrantCutter). */
  cutQuadrants?: QuadrantCutter;
}

/**
 * Runs one pool worker as a process: Postgres, Redis, adapters, the worker, the health server, and graceful
 * shutdown on SIGTERM/SIGINT (stop taking jobs, let active steps finish, close connections, exit 0).
 * Each worker service's main.ts is this call with its pool and config.
 */
export async function runPoolWorkerService(pool: Pool, config: Readonly<PoolWorkerConfig>, opts: PoolWorkerServiceOptions = {}): Promise<void> {
  const logger = createLogger({ service: `worker-${pool}`, level: config.LOG_LEVEL, flushMs: config.LOG_FLUSH_MS });
  const tracing = startTracing({ service: `worker-${pool}`, endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT });
  collectProcessMetrics(`worker-${pool}`);
  // Default pool: one connection per concurrent step (at most 20: a step holds one only for a statement) + the sweep.
  const ds = createDataSource(postgresOptions(config, Math.min(20, config.WORKER_CONCURRENCY + 2), `gmg-worker-${pool}`));
  await ds.initialize();
  const redis = createRedis(redisTargetOf(config), 'worker');
  await checkRedisPolicy(redis, config.REDIS_REQUIRE_NOEVICTION, (msg) => logger.warn(msg));
  const adapters = createUpstreamAdapters({
    timeoutMs: config.UPSTREAM_TIMEOUT_MS,
    syncTimeoutMs: config.UPSTREAM_SYNC_TIMEOUT_MS,
    cutQuadrants: opts.cutQuadrants,
  });
  const keeper = mediaKeeperOf(config);
  // The health server answers before any long start-up work (the keeper's first check may rebuild the pool from
  // Postgres after a Redis loss): live meanwhile, not ready until the worker has started (issue 38).
  const started: { pw?: PoolWorker } = {};
  let draining = false;
  const stallMs = pollLoopStallMs(config.UPSTREAM_TIMEOUT_MS);
  const health = await startHealthServer({
    port: config.HEALTH_PORT,
    checks: { redis: () => checkRedisReady(redis) },
    degradable: { postgres: () => pingDatabase(ds), redis_memory: () => checkRedisMemory(redis) },
    liveness: {
      worker: () => draining || !started.pw || started.pw.workers.every((w) => w.isRunning()),
      poll_loop: () => draining || !started.pw || started.pw.pollLoop.sinceLastClaimMs() < stallMs,
      redis: () => redis.status !== 'end',
    },
    isStarting: () => !started.pw,
    isDraining: () => draining,
    onCheckFailed: (probe, err) => logger.warn({ probe, err: err.message }, 'readiness probe failed'),
  });
  logger.info({ pool, healthPort: health.port }, 'health server up; starting the worker');
  const pw = await startPoolWorker(
    {
      pool,
      ds,
      redis,
      prefix: config.QUEUE_PREFIX,
      shards: config.QUEUE_SHARDS[pool],
      billingShards: config.QUEUE_SHARDS.billing,
      adapters,
      keeper,
      logger,
      completion: opts.completion?.(ds),
      channelBackOff: { baseMs: config.CHANNEL_COOLDOWN_MS, maxMs: config.CHANNEL_COOLDOWN_MAX_MS },
    },
    {
      concurrency: config.WORKER_CONCURRENCY,
      pollIntervalScale: config.POLL_INTERVAL_SCALE,
      sweepIntervalMs: config.SWEEP_INTERVAL_MS,
      channelProbeIntervalMs: config.CHANNEL_PROBE_INTERVAL_MS,
      lockDuration: config.WORKER_LOCK_MS,
      stalledInterval: config.WORKER_LOCK_MS,
      callbacks: callbacksOf(config),
    },
  );
  started.pw = pw;
  logger.info({ pool, healthPort: health.port }, 'worker ready');
  onShutdownSignals(
    async () => {
      draining = true;
      await pw.close();
      await keeper.close();
      await closeChannelDispatchers();
      await health.close();
      await redis.quit();
      await ds.destroy();
      await tracing.shutdown();
      logger.info('worker stopped');
    },
    { log: (msg, err) => logger.info({ err: (err as Error | undefined)?.message }, msg) },
  );
}

/** Vendor callbacks (issue 35 item 8): on when UPSTREAM_CALLBACK_BASE_URL names the edge as vendors reach it. */
function callbacksOf(config: Readonly<PoolWorkerConfig>): PoolWorkerOptions['callbacks'] {
  if (!config.UPSTREAM_CALLBACK_BASE_URL || !config.UPSTREAM_CALLBACK_SIGNING_KEY) return undefined;
  return {
    links: createCallbackLinks({ baseUrl: config.UPSTREAM_CALLBACK_BASE_URL, signingKey: config.UPSTREAM_CALLBACK_SIGNING_KEY }),
    pollFactor: config.UPSTREAM_CALLBACK_POLL_FACTOR,
  };
}

/**
 * Liveness of the steady poll path: a claim loop that has not claimed for this long is stuck. A turning loop claims
 * every 250 ms at most (1 s after a failure); a claim waits at most the worker's Redis command timeout, and a full
 * loop waits for steps that end within the upstream timeout — twice both together is never a healthy loop.
 */
export function pollLoopStallMs(upstreamTimeoutMs: number): number {
  return 2 * (upstreamTimeoutMs + WORKER_MIN_COMMAND_TIMEOUT_MS);
}

/**
 * Results kept by us (docs/upstreams/results.md): the store RESULT_STORE_URL names (S3 credentials from the SDK's
 * own chain), links signed with RESULT_SIGNING_KEY on the edge's public base, links off a channel's host checked
 * by the system's DNS as the edge checks media URLs.
 */
function mediaKeeperOf(config: Readonly<PoolWorkerConfig>): ClosableMediaKeeper {
  const store = createResultStore(config.RESULT_STORE_URL, {
    endpoint: config.RESULT_STORE_ENDPOINT,
    region: config.RESULT_STORE_REGION,
    forcePathStyle: config.RESULT_STORE_FORCE_PATH_STYLE,
  });
  return createMediaKeeper({
    store,
    links: createResultLinks({ publicBaseUrl: config.PUBLIC_BASE_URL, signingKey: config.RESULT_SIGNING_KEY }),
    publicHosts: new PublicHostResolver({ timeoutMs: 2000, cacheTtlMs: 60_000 }),
    linkTtlSeconds: config.RESULT_LINK_TTL_SECONDS,
    maxBytes: { image: Math.min(config.RESULT_MAX_BYTES, 50 * 1024 * 1024), video: config.RESULT_MAX_BYTES },
    timeoutMs: config.RESULT_DOWNLOAD_TIMEOUT_MS,
  });
}
