import 'reflect-metadata';
import type { Server } from 'node:http';
import { createDataSource } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { collectProcessMetrics, reportQueueDepth, startTracing } from '@gmg/observability';
import { Producers, RedisReachability, checkRedisPolicy, createRedis, onShutdownSignals } from '@gmg/queue';
import { MessagesUpstreamClient, closeChannelDispatchers } from '@gmg/upstream';
import { createApp } from './app';
import { loadApiEdgeConfig } from './config';
import { startEdgeTimers } from './edge-timers';
import { appServer } from './http/app-server';

/** How long in-flight requests may take to finish after SIGTERM before connections are cut. */
const DRAIN_TIMEOUT_MS = 25_000;

async function main(): Promise<void> {
  const config = loadApiEdgeConfig();
  const logger = createLogger({ service: 'api-edge', level: config.logLevel, flushMs: config.logFlushMs });
  const tracing = startTracing({ service: 'api-edge', endpoint: config.otlpEndpoint });
  collectProcessMetrics('api-edge');

  const dataSource = createDataSource(config.postgres);
  await dataSource.initialize();
  // 'producer': fail fast while Redis is away instead of queueing commands behind a request. Auto-pipelining: the
  // commands of every request handled in one turn of the event loop (task view reads and writes, enqueues, rate
  // counters) leave in one socket write instead of one each — on loopback a write costs ~50–100 µs of the
  // sender's CPU (docs/benchmarks-archive.md, ceiling notes 2026-11-24 evening).
  const redis = createRedis(config.redis, 'producer', { enableAutoPipelining: true });
  await new Promise<void>((resolve, reject) => {
    if (redis.status === 'ready') return resolve();
    redis.once('ready', () => resolve());
    redis.once('error', reject);
  });
  redis.on('error', (err) => logger.warn({ err }, 'redis connection error'));
  await checkRedisPolicy(redis, config.redisRequireNoeviction, (msg) => logger.warn(msg));
  // Submits are refused (503, before any hold) while this edge's Redis does not answer: a PING every 500 ms, stale
  // after 1 s (at most the command timeout) — a black-holed Redis never hangs a submit after the money commit.
  const reachability = new RedisReachability(redis, { intervalMs: 500, staleMs: Math.min(1000, config.redis.limits?.commandTimeoutMs ?? 1000) }).start();
  const producers = new Producers(redis, config.queuePrefix, config.queueShards, reachability);
  // The edge holds a producer per queue: it reports every queue's depth (gmg_queue_jobs), read on scrape.
  reportQueueDepth(() => producers.jobCounts());

  let draining = false;
  const messagesClient = new MessagesUpstreamClient(config.messagesRelay);
  const { app, background } = createApp({ config, logger, dataSource, redis, producers, messagesClient, isDraining: () => draining });
  const timers = startEdgeTimers(background);
  const server: Server = await new Promise((resolve) => {
    const s = appServer(app, config).listen(config.port, () => resolve(s));
  });
  logger.info({ port: config.port, publicBaseUrl: config.publicBaseUrl }, 'api-edge listening');

  onShutdownSignals(
    async (signal) => {
      draining = true;
      logger.info({ signal }, 'draining: no new connections, finishing in-flight requests');
      await drainServer(server, () => logger.warn('drain timeout: closing remaining connections'));
      await timers.stop();
      await background.creditLeases.close().catch((err: unknown) => logger.warn({ err }, 'closing credit leases'));
      await background.taskLeases?.close().catch((err: unknown) => logger.warn({ err }, 'closing task-hold leases'));
      await messagesClient.close().catch((err: unknown) => logger.warn({ err }, 'closing messages upstream pools'));
      await closeChannelDispatchers();
      reachability.stop();
      await producers.close().catch((err: unknown) => logger.warn({ err }, 'closing queues'));
      await redis.quit().catch(() => redis.disconnect());
      await dataSource.destroy().catch((err: unknown) => logger.warn({ err }, 'closing postgres'));
      await tracing.shutdown().catch((err: unknown) => logger.warn({ err }, 'flushing traces'));
      logger.info('api-edge stopped');
    },
    // Beyond the drain: the closes after it get their own margin before the hard exit.
    { hardTimeoutMs: DRAIN_TIMEOUT_MS + 20_000, log: (msg, err) => logger.info({ err }, msg) },
  );
}

/** Stops accepting connections and waits for in-flight requests; cuts what is left after DRAIN_TIMEOUT_MS. */
async function drainServer(server: Server, onForce: () => void): Promise<void> {
  const force = setTimeout(() => {
    onForce();
    server.closeAllConnections();
  }, DRAIN_TIMEOUT_MS);
  force.unref();
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
  clearTimeout(force);
}

main().catch((err: unknown) => {
  // The logger may not exist yet (bad environment): plain stderr, then a non-zero exit.
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
