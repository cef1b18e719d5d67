import { Joi, commonSchema, env, type CommonEnv } from '@gmg/config';

export interface PoolWorkerConfig extends CommonEnv {
  HEALTH_PORT: number;
  WORKER_CONCURRENCY: number;
  POLL_INTERVAL_SCALE: number;
  UPSTREAM_TIMEOUT_MS: number;
  UPSTREAM_SYNC_TIMEOUT_MS: number;
  SWEEP_INTERVAL_MS: number;
  WORKER_LOCK_MS: number;
}

/** The environment of a pool worker service; only the health port default differs between pools. */
export function poolWorkerEnvSchema(defaultHealthPort: number): Joi.ObjectSchema<PoolWorkerConfig> {
  return Joi.object<PoolWorkerConfig>({
    ...commonSchema,
    HEALTH_PORT: env.port(defaultHealthPort),
    WORKER_CONCURRENCY: env.positiveInt(50).max(10_000),
    /** Multiplies upstream poll intervals and retry backoffs; small values are for tests. */
    POLL_INTERVAL_SCALE: Joi.number().greater(0).max(100).default(1),
    UPSTREAM_TIMEOUT_MS: env.positiveInt(30_000),
    /** One synchronous generation call (OpenAI-compatible images: minutes at high quality), in a submit step. */
    UPSTREAM_SYNC_TIMEOUT_MS: env.positiveInt(300_000).max(1_800_000),
    SWEEP_INTERVAL_MS: env.positiveInt(15_000).min(100),
    /** Job lock and stalled-check period: how soon the jobs of a killed worker are taken up again. */
    WORKER_LOCK_MS: env.positiveInt(30_000).min(500),
  });
}
