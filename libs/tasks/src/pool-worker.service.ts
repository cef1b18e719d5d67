import type { Pool } from '@gmg/contracts';
import type { DataSource } from 'typeorm';
import { createDataSource, pingDatabase } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { collectProcessMetrics, startTracing } from '@gmg/observability';
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
export async function runPoolWorkerService(pool: Pool, config: PoolWorkerConfig, opts: PoolWorkerServiceOptions = {}): Promise<void> {
  const logger = createLogger({ service: `worker-${pool}`, level: config.logLevel, flushMs: config.logFlushMs });
  const tracing = startTracing({ service: `worker-${pool}`, endpoint: config.otlpEndpoint });
  collectProcessMetrics(`worker-${pool}`);
  const ds = createDataSource(config.postgres);
  await ds.initialize();
  const redis = createRedis(config.redis, 'worker');
  await checkRedisPolicy(redis, config.redisRequireNoeviction, (msg) => logger.warn(msg));
  const adapters = createUpstreamAdapters({
    timeoutMs: config.upstreamTimeoutMs,
    syncTimeoutMs: config.upstreamSyncTimeoutMs,
    cutQuadrants: opts.cutQuadrants,
  });
  const keeper = mediaKeeperOf(config.results);
  // The health server answers before any long start-up work (the keeper's first check may rebuild the pool from
  // Postgres after a Redis loss): live meanwhile, not ready until the worker has started (issue 38).
  const started: { pw?: PoolWorker } = {};
  let draining = false;
  const stallMs = pollLoopStallMs(config.upstreamTimeoutMs);
  const health = await startHealthServer({
    port: config.healthPort,
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
      prefix: config.queuePrefix,
      shards: config.queueShards[pool],
      billingShards: config.queueShards.billing,
      adapters,
      keeper,
      logger,
      completion: opts.completion?.(ds),
      channelBackOff: config.channelBackOff,
    },
    {
      concurrency: config.concurrency,
      pollIntervalScale: config.pollIntervalScale,
      sweepIntervalMs: config.sweepIntervalMs,
      channelProbeIntervalMs: config.channelProbeIntervalMs,
      lockDuration: config.lockMs,
      stalledInterval: config.lockMs,
      callbacks: callbacksOf(config.callbacks),
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
function callbacksOf({ baseUrl, signingKey, pollFactor }: PoolWorkerConfig['callbacks']): PoolWorkerOptions['callbacks'] {
  if (!baseUrl || !signingKey) return undefined;
  return { links: createCallbackLinks({ baseUrl, signingKey }), pollFactor };
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
function mediaKeeperOf(r: PoolWorkerConfig['results']): ClosableMediaKeeper {
  return createMediaKeeper({
    store: createResultStore(r.storeUrl, { endpoint: r.endpoint, region: r.region, forcePathStyle: r.forcePathStyle }),
    links: createResultLinks({ publicBaseUrl: r.publicBaseUrl, signingKey: r.signingKey }),
    publicHosts: new PublicHostResolver({ timeoutMs: 2000, cacheTtlMs: 60_000 }),
    linkTtlSeconds: r.linkTtlSeconds,
    maxBytes: { image: Math.min(r.maxBytes, 50 * 1024 * 1024), video: r.maxBytes },
    timeoutMs: r.downloadTimeoutMs,
  });
}
