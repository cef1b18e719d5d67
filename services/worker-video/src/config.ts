import { loadConfig } from '@gmg/config';
import { poolWorkerEnvSchema, type PoolWorkerConfig } from '@gmg/tasks';

/**
 * Env: DATABASE_URL, REDIS_URL, LOG_LEVEL, REDIS_REQUIRE_NOEVICTION, QUEUE_PREFIX (gmg), HEALTH_PORT (9102),
 * WORKER_CONCURRENCY (50), POLL_INTERVAL_SCALE (1), UPSTREAM_TIMEOUT_MS (30000), SWEEP_INTERVAL_MS (15000), WORKER_LOCK_MS (30000),
 * the result store: RESULT_SIGNING_KEY (required), RESULT_STORE_URL, PUBLIC_BASE_URL, RESULT_* (docs/configuration.md).
 */
export function loadWorkerConfig(source: NodeJS.ProcessEnv = process.env): Readonly<PoolWorkerConfig> {
  return loadConfig(poolWorkerEnvSchema(9102), source);
}
