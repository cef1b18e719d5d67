import { isIP } from 'node:net';
import path from 'node:path';
import {
  Joi,
  commonSchema,
  env,
  loadConfig,
  postgresOptions,
  redisTargetOf,
  resultStoreSchema,
  upstreamCallbackSchema,
  type CommonEnv,
  type ResultStoreEnv,
  type UpstreamCallbackEnv,
} from '@gmg/config';

/** The messages relay's bounds; the first four are the upstream client's options (MessagesClientOptions). */
interface MessagesRelayConfig {
  /** Time to a connection to a channel. */
  connectTimeoutMs: number;
  /** Time to the response headers of a streamed call: a hung channel fails over after this. */
  headersTimeoutMs: number;
  /** Longest silence inside a stream (upstreams ping every few seconds). */
  bodyTimeoutMs: number;
  /** Time to a non-streamed answer: the upstream sends its headers only with the whole answer. */
  answerTimeoutMs: number;
  /** Largest non-streamed answer relayed (502 past it). */
  maxAnswerBytes: number;
  /** Largest single SSE event (the most one stream holds back). */
  maxEventBytes: number;
  /** Consecutive failures that open a channel's circuit. */
  breakerFailures: number;
  /** How long an open circuit skips its channel before one trial call. */
  breakerCooldownMs: number;
}

/** A failing channel's shared cool-down (CHANNEL_COOLDOWN_MS, doubling per failed trial up to CHANNEL_COOLDOWN_MAX_MS). */
interface ChannelBackOffConfig {
  baseMs: number;
  maxMs: number;
}

/** A TRUST_PROXY entry Express understands: an address, a CIDR, or one of its named ranges. */
const proxyEntry = (e: string): boolean => {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(e)) return true;
  const [addr, bits, extra] = e.split('/');
  if (extra !== undefined || !isIP(addr)) return false;
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (isIP(addr) === 4 ? 32 : 128));
};

// The default skips the rules below (Joi), so it is the parsed value itself.
const trustProxySchema = Joi.string()
  .trim()
  .default(false)
  .custom((v: string, h) => {
    if (v === 'false') return false;
    if (/^\d+$/.test(v)) return Number(v);
    // `true` would believe the leftmost X-Forwarded-For, which any client writes itself.
    if (v === 'true')
      return h.message({ custom: 'true trusts every hop (a client could pick its own address): give the number of proxies or their addresses' });
    const entries = v.split(',').map((x) => x.trim());
    if (entries.every(proxyEntry)) return entries.join(',');
    return h.message({ custom: 'must be false, a number of proxies, or a comma-separated list of addresses/CIDRs (or loopback, linklocal, uniquelocal)' });
  });

/** A DNS server as node:dns takes it: an IP, `ipv4:port`, or `[ipv6]:port`. */
const dnsServerEntry = (e: string): boolean => {
  if (isIP(e)) return true;
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):(\d{1,5})$/.exec(e);
  return !!m && isIP(m[1] ?? m[2]) !== 0 && Number(m[3]) > 0 && Number(m[3]) < 65536;
};

const dnsServersSchema = Joi.string()
  .allow('')
  .default('')
  .custom((v: string, h) => {
    const entries = v
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
    if (entries.every(dnsServerEntry)) return entries.join(',');
    return h.message({ custom: 'must be a comma-separated list of DNS server addresses (ip, ip:port or [ipv6]:port)' });
  });

const MIB = 1024 * 1024;

const schema = Joi.object({
  ...commonSchema,
  PORT: env.port(8080),
  PUBLIC_BASE_URL: Joi.string().uri({ scheme: ['http', 'https'] }),
  // A management token grants money and keys: long, and never a copied placeholder.
  ADMIN_TOKEN: Joi.string()
    .min(24)
    .pattern(/change-?me/i, { invert: true, name: 'placeholder' })
    .required(),
  TASK_TIMEOUT_SECONDS: env.positiveInt(1800),
  MAX_BODY_BYTES: Joi.number()
    .integer()
    .min(1024)
    .max(200 * MIB)
    .default(25 * MIB),
  // Large bodies (≥ 256 KiB) held at once by one process, and how long one waits for room (http/body-budget.ts).
  MAX_BODY_BYTES_IN_FLIGHT: Joi.number()
    .integer()
    .min(MIB)
    .max(4096 * MIB)
    .default(64 * MIB),
  BODY_BUDGET_WAIT_MS: Joi.number().integer().min(0).max(120_000).default(10_000),
  // One key's most of that budget: its slow large bodies cannot take every other key's room (http/body-budget.ts).
  BODY_BUDGET_KEY_SHARE: Joi.number().greater(0).max(1).default(0.5),
  // A slow sender holds a connection (and a large body its share of the budget) at most this long, not node's 300 s.
  REQUEST_TIMEOUT_MS: Joi.number().integer().min(1000).max(3_600_000).default(60_000),
  HEADERS_TIMEOUT_MS: Joi.number().integer().min(1000).max(3_600_000).default(15_000),
  KEEP_ALIVE_TIMEOUT_MS: Joi.number().integer().min(1000).max(3_600_000).default(65_000),
  // At most 5 s: a revoked key must stop working within 5 seconds.
  AUTH_CACHE_TTL_MS: Joi.number().integer().min(0).max(5000).default(2000),
  AUTH_STALE_IF_ERROR_MS: Joi.number().integer().min(0).max(3_600_000).default(300_000),
  PRICE_CACHE_TTL_MS: Joi.number().integer().min(0).max(3_600_000).default(5000),
  UPLOAD_DIR: Joi.string().min(1).default('.data/uploads'),
  // The console's build (/console; docs/management-api.md, "Console routes"); unset: packages/console/dist.
  CONSOLE_DIR: Joi.string().min(1),
  // Where result images and videos may come from besides this origin (CSP source expressions, space-separated).
  CONSOLE_MEDIA_SOURCES: Joi.string()
    .trim()
    .allow('')
    .pattern(/^((https?:|https?:\/\/(\*\.)?[A-Za-z0-9.-]+(:[0-9]{1,5})?)(\s+|$))*$/, 'CSP sources (http:, https:, or origins)')
    .default('https:'),
  UPLOAD_MAX_BYTES: Joi.number()
    .integer()
    .min(1024)
    .max(100 * MIB)
    .default(10 * MIB),
  UPLOAD_TTL_SECONDS: Joi.number()
    .integer()
    .min(60)
    .max(30 * 86400)
    .default(86400),
  UPLOAD_SWEEP_INTERVAL_MS: Joi.number().integer().min(100).max(86_400_000).default(600_000),
  // Per account, over unexpired uploads; 0 = off. At least one largest image, or no upload could ever fit.
  UPLOAD_QUOTA_BYTES: Joi.alternatives(
    Joi.number().valid(0),
    Joi.number()
      .integer()
      .min(Joi.ref('UPLOAD_MAX_BYTES'))
      .max(1024 * 1024 * MIB),
  )
    .default(1024 * MIB)
    .messages({ 'alternatives.match': '"UPLOAD_QUOTA_BYTES" must be 0 (no quota) or at least UPLOAD_MAX_BYTES' }),
  UPLOAD_QUOTA_FILES: Joi.number().integer().min(0).max(10_000_000).default(1000),
  // RESULT_STORE_URL, RESULT_SIGNING_KEY (required), RESULT_LINK_TTL_SECONDS, RESULT_STORE_ENDPOINT/REGION/FORCE_PATH_STYLE: shared with the workers
  ...resultStoreSchema,
  // UPSTREAM_CALLBACK_SIGNING_KEY: shared with the workers (vendor callbacks, docs/upstreams.md)
  ...upstreamCallbackSchema,
  MESSAGES_LEASE_UNITS: Joi.number().min(0).max(1_000_000).default(1),
  MESSAGES_LEASE_TTL_SECONDS: Joi.number().integer().min(3).max(3600).default(30),
  MESSAGES_CHANNEL_CACHE_TTL_MS: Joi.number().integer().min(0).max(3_600_000).default(5000),
  UPSTREAM_TIMEOUT_MS: Joi.number().integer().min(1).max(600_000).default(10_000),
  TASK_LEASE_UNITS: Joi.number().min(0).max(1_000_000).default(5),
  TASK_LEASE_TTL_SECONDS: Joi.number().integer().min(3).max(3600).default(30),
  TASK_LEASE_IDLE_SECONDS: Joi.number().min(0.1).max(3600).default(5),
  MESSAGES_CONNECT_TIMEOUT_SECONDS: Joi.number().min(0.1).max(60).default(5),
  MESSAGES_HEADERS_TIMEOUT_SECONDS: Joi.number().min(0.1).max(600).default(15),
  MESSAGES_STREAM_IDLE_TIMEOUT_SECONDS: Joi.number().min(1).max(3600).default(60),
  MESSAGES_ANSWER_TIMEOUT_SECONDS: Joi.number().min(1).max(3600).default(600),
  MESSAGES_MAX_ANSWER_BYTES: Joi.number()
    .integer()
    .min(1024)
    .max(1024 * MIB)
    .default(32 * MIB),
  MESSAGES_MAX_EVENT_BYTES: Joi.number()
    .integer()
    .min(1024)
    .max(256 * MIB)
    .default(4 * MIB),
  MESSAGES_BREAKER_FAILURES: Joi.number().integer().min(1).max(1000).default(3),
  MESSAGES_BREAKER_COOLDOWN_SECONDS: Joi.number().min(0).max(3600).default(30),
  // channel health (docs/management-api.md): a failing channel's cool-down, doubling per failed trial up to the max
  CHANNEL_COOLDOWN_MS: Joi.number().integer().min(100).max(3_600_000).default(30_000),
  CHANNEL_COOLDOWN_MAX_MS: Joi.number().integer().min(100).max(86_400_000).default(900_000),
  ARTGEN_DESCRIBE_WAIT_MS: Joi.number().integer().min(0).max(120_000).default(30_000),
  WEBHOOK_ALLOW_INSECURE: env.bool(false),
  ADMIN_QUEUES_WRITE: env.bool(false),
  TRUST_PROXY: trustProxySchema,
  FAILED_AUTH_LIMIT: Joi.number().integer().min(1).max(100_000).default(20),
  FAILED_AUTH_WINDOW_SECONDS: Joi.number().integer().min(1).max(86_400).default(60),
  FAILED_AUTH_BLOCK_SECONDS: Joi.number().integer().min(1).max(86_400).default(300),
  MEDIA_DNS_SERVERS: dnsServersSchema,
  MEDIA_DNS_TIMEOUT_MS: Joi.number().integer().min(100).max(30_000).default(2000),
  MEDIA_DNS_CACHE_TTL_MS: Joi.number().integer().min(0).max(3_600_000).default(60_000),
});

interface RawEnv extends CommonEnv, ResultStoreEnv, UpstreamCallbackEnv {
  PORT: number;
  PUBLIC_BASE_URL?: string;
  ADMIN_TOKEN: string;
  TASK_TIMEOUT_SECONDS: number;
  MAX_BODY_BYTES: number;
  MAX_BODY_BYTES_IN_FLIGHT: number;
  BODY_BUDGET_WAIT_MS: number;
  BODY_BUDGET_KEY_SHARE: number;
  REQUEST_TIMEOUT_MS: number;
  HEADERS_TIMEOUT_MS: number;
  KEEP_ALIVE_TIMEOUT_MS: number;
  AUTH_CACHE_TTL_MS: number;
  AUTH_STALE_IF_ERROR_MS: number;
  PRICE_CACHE_TTL_MS: number;
  UPLOAD_DIR: string;
  CONSOLE_DIR?: string;
  CONSOLE_MEDIA_SOURCES: string;
  UPLOAD_MAX_BYTES: number;
  UPLOAD_TTL_SECONDS: number;
  UPLOAD_SWEEP_INTERVAL_MS: number;
  UPLOAD_QUOTA_BYTES: number;
  UPLOAD_QUOTA_FILES: number;
  MESSAGES_LEASE_UNITS: number;
  MESSAGES_LEASE_TTL_SECONDS: number;
  MESSAGES_CHANNEL_CACHE_TTL_MS: number;
  UPSTREAM_TIMEOUT_MS: number;
  TASK_LEASE_UNITS: number;
  TASK_LEASE_TTL_SECONDS: number;
  TASK_LEASE_IDLE_SECONDS: number;
  MESSAGES_CONNECT_TIMEOUT_SECONDS: number;
  MESSAGES_HEADERS_TIMEOUT_SECONDS: number;
  MESSAGES_STREAM_IDLE_TIMEOUT_SECONDS: number;
  MESSAGES_ANSWER_TIMEOUT_SECONDS: number;
  MESSAGES_MAX_ANSWER_BYTES: number;
  MESSAGES_MAX_EVENT_BYTES: number;
  MESSAGES_BREAKER_FAILURES: number;
  MESSAGES_BREAKER_COOLDOWN_SECONDS: number;
  CHANNEL_COOLDOWN_MS: number;
  CHANNEL_COOLDOWN_MAX_MS: number;
  ARTGEN_DESCRIBE_WAIT_MS: number;
  WEBHOOK_ALLOW_INSECURE: boolean;
  ADMIN_QUEUES_WRITE: boolean;
  TRUST_PROXY: boolean | number | string;
  FAILED_AUTH_LIMIT: number;
  FAILED_AUTH_WINDOW_SECONDS: number;
  FAILED_AUTH_BLOCK_SECONDS: number;
  MEDIA_DNS_SERVERS: string;
  MEDIA_DNS_TIMEOUT_MS: number;
  MEDIA_DNS_CACHE_TTL_MS: number;
}

/**
 * Everything api-edge reads from its environment, parsed once, frozen; this file is the only reader of process.env.
 * The type is what toConfig makes of the checked environment (no separate interface to keep in step).
 */
export type ApiEdgeConfig = ReturnType<typeof toConfig>;

/** Pure: parses an environment (tests pass their own). Throws ConfigError listing every bad key. */
export function parseConfig(source: Record<string, string | undefined>): ApiEdgeConfig {
  return toConfig(loadConfig<RawEnv>(schema as Joi.ObjectSchema<RawEnv>, source));
}

// not annotated: its return type IS ApiEdgeConfig (one list of the settings, each with its comment)
function toConfig(e: Readonly<RawEnv>) {
  return Object.freeze({
    port: e.PORT,
    /** Absolute base of this gateway as clients see it (upload links, docs). No trailing slash. */
    publicBaseUrl: (e.PUBLIC_BASE_URL ?? `http://127.0.0.1:${e.PORT}`).replace(/\/+$/, ''),
    /** Bearer token of the management API (`/api/*`). Secret: no default. */
    adminToken: e.ADMIN_TOKEN,
    /** A task not finished this long after submission fails with `Task timeout`. */
    taskTimeoutSeconds: e.TASK_TIMEOUT_SECONDS,
    /** Largest accepted request body (JSON with Base64 references). */
    maxBodyBytes: e.MAX_BODY_BYTES,
    /** Bytes of large request bodies (≥ 256 KiB) one process holds at once; more wait (http/body-budget.ts). */
    maxBodyBytesInFlight: e.MAX_BODY_BYTES_IN_FLIGHT,
    /** How long a large body waits for room in that budget before it is refused (503, Retry-After). */
    bodyBudgetWaitMs: e.BODY_BUDGET_WAIT_MS,
    /** The most of that budget one API key holds at once, a fraction in (0, 1] (BODY_BUDGET_KEY_SHARE). */
    bodyBudgetKeyShare: e.BODY_BUDGET_KEY_SHARE,
    /** How long a client has to send a whole request (headers and body): node's requestTimeout; then 408. */
    requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    // node refuses a headers timeout above the request timeout
    /** How long a client has to send the request headers: node's headersTimeout. */
    headersTimeoutMs: Math.min(e.HEADERS_TIMEOUT_MS, e.REQUEST_TIMEOUT_MS),
    /** How long the edge keeps an idle keep-alive connection: node's keepAliveTimeout. */
    keepAliveTimeoutMs: e.KEEP_ALIVE_TIMEOUT_MS,
    /** How long an authenticated key is cached in-process; a revoked key stops working within this time. */
    authCacheTtlMs: e.AUTH_CACHE_TTL_MS,
    /** How long past AUTH_CACHE_TTL_MS a known key still authenticates while Postgres is unreachable. */
    authStaleIfErrorMs: e.AUTH_STALE_IF_ERROR_MS,
    priceCacheTtlMs: e.PRICE_CACHE_TTL_MS,
    /** Postgres: DATABASE_URL (PgBouncer in production), pool size and timeouts (PG_*; PG_POOL_MAX default 20). */
    postgres: postgresOptions(e, 20, 'api-edge'),
    redisUrl: e.REDIS_URL,
    /** Where Redis is: REDIS_URL, or REDIS_CLUSTER_NODES, or REDIS_SENTINELS + REDIS_SENTINEL_MASTER. */
    redis: redisTargetOf(e),
    /** Queue shards (QUEUE_SHARDS): the edge enqueues a task, or a cancelled task's settlement, on shard shardOf(id, K). */
    queueShards: e.QUEUE_SHARDS,
    logLevel: e.LOG_LEVEL,
    /** Log lines buffered at most this long (0: each line written at once). */
    logFlushMs: e.LOG_FLUSH_MS,
    /** BullMQ key prefix; also prefixes the Redis task view. */
    queuePrefix: e.QUEUE_PREFIX,
    redisRequireNoeviction: e.REDIS_REQUIRE_NOEVICTION,
    /** Local-disk upload storage (absolute; relative values resolve against the working directory). */
    uploadDir: path.resolve(e.UPLOAD_DIR),
    /** The console's built app (absolute); undefined: the default, packages/console/dist. */
    consoleDir: e.CONSOLE_DIR === undefined ? undefined : path.resolve(e.CONSOLE_DIR),
    /** CSP sources the console loads result media from, besides its own origin and PUBLIC_BASE_URL's. */
    consoleMediaSources: e.CONSOLE_MEDIA_SOURCES.split(/\s+/).filter(Boolean),
    /** Largest accepted image of POST /v1/uploads/images (decoded bytes). */
    uploadMaxBytes: e.UPLOAD_MAX_BYTES,
    /** Upload links stop working this long after the upload. */
    uploadTtlSeconds: e.UPLOAD_TTL_SECONDS,
    /** How often the edge's timer removes expired uploads (also triggered by upload traffic, at most this often). */
    uploadSweepIntervalMs: e.UPLOAD_SWEEP_INTERVAL_MS,
    /** Per account: decoded bytes of unexpired uploads it may keep (POST /v1/uploads/images); 0 = unbounded. */
    uploadQuotaBytes: e.UPLOAD_QUOTA_BYTES,
    /** Per account: unexpired uploads it may keep; 0 = unbounded. */
    uploadQuotaFiles: e.UPLOAD_QUOTA_FILES,
    /** Where the workers keep finished tasks' files: `s3://bucket/prefix`, or a local directory (absolute). */
    resultStoreUrl: /^(s3|file):/.test(e.RESULT_STORE_URL) ? e.RESULT_STORE_URL : path.resolve(e.RESULT_STORE_URL),
    /** Signs the result links (`/v1/results/<key>`); the workers sign with the same key. Secret: no default. */
    resultSigningKey: e.RESULT_SIGNING_KEY,
    /** Verifies vendor callbacks (`/v1/upstream-callbacks/<token>`); unset: the route is not mounted. Secret. */
    upstreamCallbackSigningKey: e.UPSTREAM_CALLBACK_SIGNING_KEY,
    /** How long a result link works; local-disk results older than this plus a day are swept. */
    resultLinkTtlSeconds: e.RESULT_LINK_TTL_SECONDS,
    /** S3-compatible endpoint of the result store (MinIO, R2…); unset: AWS S3. */
    resultStoreEndpoint: e.RESULT_STORE_ENDPOINT,
    resultStoreRegion: e.RESULT_STORE_REGION,
    resultStoreForcePathStyle: e.RESULT_STORE_FORCE_PATH_STYLE,
    /** What a credit lease asks for (minor units): the money an edge holds per account for chat calls. */
    messagesLeaseMinor: BigInt(Math.round(e.MESSAGES_LEASE_UNITS * 1_000_000)),
    /** A lease its edge stops renewing (a crashed edge) expires after this and is released by any edge's sweeper. */
    messagesLeaseTtlMs: e.MESSAGES_LEASE_TTL_SECONDS * 1000,
    /** How long the messages channels of a model are cached in-process; a channel change applies within this time. */
    messagesChannelCacheTtlMs: e.MESSAGES_CHANNEL_CACHE_TTL_MS,
    /** Per call to a task channel's vendor made by the edge (cancel), connect to last byte. */
    upstreamTimeoutMs: e.UPSTREAM_TIMEOUT_MS,
    /** What a task-hold lease asks for (minor units); 0: every task held on its account row (docs/reliability.md). */
    taskLeaseMinor: BigInt(Math.round(e.TASK_LEASE_UNITS * 1_000_000)),
    /** A task-hold lease its edge stops renewing expires after this and is released by any edge's sweeper. */
    taskLeaseTtlMs: e.TASK_LEASE_TTL_SECONDS * 1000,
    /** A task-hold lease no submit used for this long goes back to its account. */
    taskLeaseIdleMs: Math.round(e.TASK_LEASE_IDLE_SECONDS * 1000),
    /** Timeouts, memory bounds and channel health of the messages relay (docs/messages.md, "Timeouts and limits"). */
    messagesRelay: Object.freeze<MessagesRelayConfig>({
      connectTimeoutMs: e.MESSAGES_CONNECT_TIMEOUT_SECONDS * 1000,
      headersTimeoutMs: e.MESSAGES_HEADERS_TIMEOUT_SECONDS * 1000,
      bodyTimeoutMs: e.MESSAGES_STREAM_IDLE_TIMEOUT_SECONDS * 1000,
      answerTimeoutMs: e.MESSAGES_ANSWER_TIMEOUT_SECONDS * 1000,
      maxAnswerBytes: e.MESSAGES_MAX_ANSWER_BYTES,
      maxEventBytes: e.MESSAGES_MAX_EVENT_BYTES,
      breakerFailures: e.MESSAGES_BREAKER_FAILURES,
      breakerCooldownMs: e.MESSAGES_BREAKER_COOLDOWN_SECONDS * 1000,
    }),
    /** The shared health's cool-down of a failing channel (the workers read the same variables). */
    channelBackOff: Object.freeze<ChannelBackOffConfig>({ baseMs: e.CHANNEL_COOLDOWN_MS, maxMs: e.CHANNEL_COOLDOWN_MAX_MS }),
    /** How long a describe request waits for its text before answering with the plain acknowledgement. */
    artgenDescribeWaitMs: e.ARTGEN_DESCRIBE_WAIT_MS,
    /** OTLP/HTTP collector base URL; unset: tracing off. */
    otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT,
    /**
     * Local mode for webhooks (WEBHOOK_ALLOW_INSECURE): a `callback_url` may be http and point at loopback or a
     * private address. Off (production), https to a public host only (docs/webhooks.md).
     */
    webhookAllowInsecure: e.WEBHOOK_ALLOW_INSECURE,
    /** ADMIN_QUEUES_WRITE: the queue dashboard (/admin/queues) may retry, promote, remove and clean jobs. */
    adminQueuesWrite: e.ADMIN_QUEUES_WRITE,
    /**
     * Express `trust proxy`: which hops' X-Forwarded-For to believe for the client address (failed-auth throttle,
     * logs). false = the TCP peer; a number = that many proxies in front; a list = the proxies' addresses/CIDRs.
     */
    trustProxy: e.TRUST_PROXY,
    /** Failed API-key authentications a client address may make per window before it gets 429. */
    failedAuthLimit: e.FAILED_AUTH_LIMIT,
    failedAuthWindowSeconds: e.FAILED_AUTH_WINDOW_SECONDS,
    /** How long an address over its failed-auth budget is refused. */
    failedAuthBlockSeconds: e.FAILED_AUTH_BLOCK_SECONDS,
    /** DNS servers (`host` or `host:port`) that resolve media URL host names at submit; empty = the system's. */
    mediaDnsServers: e.MEDIA_DNS_SERVERS.split(',')
      .map((x) => x.trim())
      .filter(Boolean),
    /** A media URL host that does not resolve within this is refused. */
    mediaDnsTimeoutMs: e.MEDIA_DNS_TIMEOUT_MS,
    /** How long a host's verdict is cached. */
    mediaDnsCacheTtlMs: e.MEDIA_DNS_CACHE_TTL_MS,
  });
}

/** The service's config from process.env. */
export function loadApiEdgeConfig(): ApiEdgeConfig {
  return parseConfig(process.env);
}
