import { Joi, configLoader, env } from '@gmg/config';

/** Everything upstream-sim reads from its environment, parsed once, frozen. The only place that reads process.env. */
export interface SimConfig {
  port: number;
  /** Multiplies every simulated duration (0.05 in tests: a 2.5 s image task takes 125 ms). */
  timeScale: number;
  /** Base of the file links in results. No trailing slash. */
  publicUrl: string;
  /** When set, every /v1 call needs `Authorization: Bearer <key>`. Secret: no default. */
  apiKey?: string;
  /** SIM_API_KEYS: more keys the gateway protocol accepts (a channel of several keys; POST /__sim/keys troubles them). */
  extraApiKeys?: string[];
  /** Tasks kept in memory (least recently used ones are forgotten). */
  maxTasks: number;
  logLevel: string;
  /** Every POST /v1/messages answers this fault (a sick channel for failover tests and demos). */
  messagesFault?: 'overloaded' | 'rate_limited' | 'hang';
  /** Pause between the deltas of a `[sim:slow]` messages stream. */
  messagesSlowDeltaMs: number;
  /** Every vendor mode's result links expire this long after they were made (tests see a vendor link die). */
  vendorLinkTtlMs?: number;
}

const schema = Joi.object({
  PORT: env.port(9090),
  SIM_TIME_SCALE: Joi.number().min(0).max(1000).default(1),
  SIM_PUBLIC_URL: Joi.string().uri({ scheme: ['http', 'https'] }),
  SIM_API_KEY: Joi.string().min(1),
  // more keys the gateway protocol (/v1) accepts beside SIM_API_KEY, comma-separated (multi-key channel tests)
  SIM_API_KEYS: Joi.string().min(1),
  SIM_MAX_TASKS: env.int(100, 10_000_000, 50_000),
  LOG_LEVEL: env.logLevel(),
  SIM_MESSAGES_FAULT: Joi.string().valid('overloaded', 'rate_limited', 'hang'),
  SIM_MESSAGES_SLOW_DELTA_MS: env.int(0, 60_000, 50),
  SIM_VENDOR_LINK_TTL_MS: Joi.number().integer().min(1).max(86_400_000),
});

interface RawEnv {
  PORT: number;
  SIM_TIME_SCALE: number;
  SIM_PUBLIC_URL?: string;
  SIM_API_KEY?: string;
  SIM_API_KEYS?: string;
  SIM_MAX_TASKS: number;
  LOG_LEVEL: string;
  SIM_MESSAGES_FAULT?: 'overloaded' | 'rate_limited' | 'hang';
  SIM_MESSAGES_SLOW_DELTA_MS: number;
  SIM_VENDOR_LINK_TTL_MS?: number;
}

function toConfig(e: Readonly<RawEnv>): SimConfig {
  return {
    port: e.PORT,
    timeScale: e.SIM_TIME_SCALE,
    publicUrl: (e.SIM_PUBLIC_URL ?? `http://127.0.0.1:${e.PORT}`).replace(/\/+$/, ''),
    ...(e.SIM_API_KEY ? { apiKey: e.SIM_API_KEY } : {}),
    ...(e.SIM_API_KEYS
      ? {
          extraApiKeys: e.SIM_API_KEYS.split(',')
            .map((k) => k.trim())
            .filter(Boolean),
        }
      : {}),
    maxTasks: e.SIM_MAX_TASKS,
    logLevel: e.LOG_LEVEL,
    ...(e.SIM_MESSAGES_FAULT ? { messagesFault: e.SIM_MESSAGES_FAULT } : {}),
    messagesSlowDeltaMs: e.SIM_MESSAGES_SLOW_DELTA_MS,
    ...(e.SIM_VENDOR_LINK_TTL_MS ? { vendorLinkTtlMs: e.SIM_VENDOR_LINK_TTL_MS } : {}),
  };
}

/** The simulator's config from its environment (process.env unless given). Throws ConfigError listing every bad key. */
export const loadSimConfig = configLoader(schema as Joi.ObjectSchema<RawEnv>, toConfig);
