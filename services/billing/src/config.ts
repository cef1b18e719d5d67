import { Joi, commonSchema, env, loadConfig, type CommonEnv } from '@gmg/config';

export interface BillingConfig extends CommonEnv {
  HEALTH_PORT: number;
  SETTLE_CONCURRENCY: number;
  SWEEP_INTERVAL_MS: number;
  /** Terminal tasks without capture/release for this long are re-settled by the sweeper. */
  UNSETTLED_AFTER_MS: number;
}

const schema = Joi.object<BillingConfig>({
  ...commonSchema,
  HEALTH_PORT: env.port(9105),
  SETTLE_CONCURRENCY: env.positiveInt(20).max(1000),
  SWEEP_INTERVAL_MS: env.positiveInt(15_000).min(100),
  UNSETTLED_AFTER_MS: env.positiveInt(30_000),
});

export function loadBillingConfig(source: NodeJS.ProcessEnv = process.env): Readonly<BillingConfig> {
  return loadConfig(schema, source);
}
