import {
  Joi,
  commonConfigOf,
  commonSchema,
  configLoader,
  env,
  resultStoreSchema,
  upstreamCallbackWorkerSchema,
  type CommonEnv,
  type ResultStoreEnv,
  type UpstreamCallbackWorkerEnv,
} from '@gmg/config';

const MIB = 1024 * 1024;

interface PoolWorkerEnv extends CommonEnv, ResultStoreEnv, UpstreamCallbackWorkerEnv {
  HEALTH_PORT: number;
  WORKER_CONCURRENCY: number;
  POLL_INTERVAL_SCALE: number;
  UPSTREAM_TIMEOUT_MS: number;
  UPSTREAM_SYNC_TIMEOUT_MS: number;
  SWEEP_INTERVAL_MS: number;
  WORKER_LOCK_MS: number;
  /** The gateway's public base (the edge's PUBLIC_BASE_URL): the base of the result links the workers sign. */
  PUBLIC_BASE_URL: string;
  RESULT_MAX_BYTES: number;
  RESULT_DOWNLOAD_TIMEOUT_MS: number;
  CHANNEL_PROBE_INTERVAL_MS: number;
  CHANNEL_COOLDOWN_MS: number;
  CHANNEL_COOLDOWN_MAX_MS: number;
}

/** Each pool worker's default HEALTH_PORT (compose and k8s give the same ones). */
const HEALTH_PORTS = { image: 9101, video: 9102, artgen: 9103, avatar: 9104 } as const;

const poolWorkerLoader = (pool: keyof typeof HEALTH_PORTS) => configLoader(poolWorkerEnvSchema(HEALTH_PORTS[pool]), (e) => toConfig(pool, e));
const loaders = { image: poolWorkerLoader('image'), video: poolWorkerLoader('video'), artgen: poolWorkerLoader('artgen'), avatar: poolWorkerLoader('avatar') };

/**
 * The config of a pool's worker service from its environment (process.env unless given; docs/configuration.md lists
 * every variable, its default and its limits); only the health port's default differs between pools.
 */
export const loadPoolWorkerConfig = Object.assign(
  (pool: keyof typeof HEALTH_PORTS, source?: NodeJS.ProcessEnv | Record<string, string | undefined>) => loaders[pool](source),
  { variables: loaders.image.variables },
);

export type PoolWorkerConfig = ReturnType<typeof loadPoolWorkerConfig>;

// not annotated: its return type IS PoolWorkerConfig
function toConfig(pool: keyof typeof HEALTH_PORTS, e: Readonly<PoolWorkerEnv>) {
  return {
    // Default pool: one connection per concurrent step (at most 20: a step holds one only for a statement) + the sweep.
    ...commonConfigOf(e, Math.min(20, e.WORKER_CONCURRENCY + 2), `gmg-worker-${pool}`),
    healthPort: e.HEALTH_PORT,
    concurrency: e.WORKER_CONCURRENCY,
    /** Multiplies upstream poll intervals and retry backoffs; small values are for tests. */
    pollIntervalScale: e.POLL_INTERVAL_SCALE,
    upstreamTimeoutMs: e.UPSTREAM_TIMEOUT_MS,
    upstreamSyncTimeoutMs: e.UPSTREAM_SYNC_TIMEOUT_MS,
    sweepIntervalMs: e.SWEEP_INTERVAL_MS,
    /** Job lock and stalled-check period: how soon the jobs of a killed worker are taken up again. */
    lockMs: e.WORKER_LOCK_MS,
    /** Results kept by us: the store, its links (signed on the edge's public base), the largest file, the download bound. */
    results: {
      storeUrl: e.RESULT_STORE_URL,
      endpoint: e.RESULT_STORE_ENDPOINT,
      region: e.RESULT_STORE_REGION,
      forcePathStyle: e.RESULT_STORE_FORCE_PATH_STYLE,
      publicBaseUrl: e.PUBLIC_BASE_URL,
      signingKey: e.RESULT_SIGNING_KEY,
      linkTtlSeconds: e.RESULT_LINK_TTL_SECONDS,
      maxBytes: e.RESULT_MAX_BYTES,
      downloadTimeoutMs: e.RESULT_DOWNLOAD_TIMEOUT_MS,
    },
    /** The channel probe's period (0: off in this process). */
    channelProbeIntervalMs: e.CHANNEL_PROBE_INTERVAL_MS,
    /** A failing channel's cool-down, doubling per failed trial up to the max (the edge reads the same variables). */
    channelBackOff: { baseMs: e.CHANNEL_COOLDOWN_MS, maxMs: e.CHANNEL_COOLDOWN_MAX_MS },
    /** Vendor callbacks: on when a base URL is set (the signing key is then required). */
    callbacks: { baseUrl: e.UPSTREAM_CALLBACK_BASE_URL, signingKey: e.UPSTREAM_CALLBACK_SIGNING_KEY, pollFactor: e.UPSTREAM_CALLBACK_POLL_FACTOR },
  };
}

function poolWorkerEnvSchema(defaultHealthPort: number): Joi.ObjectSchema<PoolWorkerEnv> {
  return Joi.object<PoolWorkerEnv>({
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
    // Results kept by us (docs/upstreams/results.md): the same store, key and link lifetime as the edge's.
    ...resultStoreSchema,
    // The edge's default (PORT 8080) when unset, as npm start and the e2e stack run it; production sets it.
    PUBLIC_BASE_URL: Joi.string()
      .uri({ scheme: ['http', 'https'] })
      .default('http://127.0.0.1:8080'),
    /** Largest kept video (an image: at most 50 MiB of it). */
    RESULT_MAX_BYTES: env.int(MIB, 16 * 1024 * MIB, 512 * MIB),
    /** Per kept file: download and store write together. */
    RESULT_DOWNLOAD_TIMEOUT_MS: env.int(100, 3_600_000, 300_000),
    // Channel health (docs/configuration.md): the probe's period (0: off in this process) and the back-off of a
    // failing channel or a refused key's trials (doubling per failed trial up to the max)
    CHANNEL_PROBE_INTERVAL_MS: env.int(0, 3_600_000, 15_000),
    CHANNEL_COOLDOWN_MS: env.int(100, 3_600_000, 30_000),
    CHANNEL_COOLDOWN_MAX_MS: env.int(100, 86_400_000, 900_000),
    // Vendor callbacks (docs/upstreams.md): UPSTREAM_CALLBACK_BASE_URL, UPSTREAM_CALLBACK_SIGNING_KEY (the edge's), the poll factor
    ...upstreamCallbackWorkerSchema,
  });
}
