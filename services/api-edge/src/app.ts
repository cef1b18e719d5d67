import express, { type Express, type RequestHandler } from 'express';
import type { DataSource } from 'typeorm';
import { maxBodyBytesOfPath } from '@gmg/contracts';
import {
  ApiKeyRepository,
  AssetGroupRepository,
  AssetRepository,
  ChannelRepository,
  ChannelHealthRepository,
  ChatCallRepository,
  CreditLeaseRepository,
  PriceRepository,
  HoldBatchingTaskRepository,
  TaskLeaseBook,
  TaskRepository,
  newTaskId,
  pingDatabase,
  type ChannelRecord,
  type MessagesChannel,
} from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { httpMetricsMiddleware, metricsHandler, routeOf, traceRequestsMiddleware } from '@gmg/observability';
import { checkRedisMemory, checkRedisReady, type Producers, type Redis } from '@gmg/queue';
import { TaskViewStore, toUnifiedTask } from '@gmg/tasks';
import {
  ChannelHealthReporter,
  CircuitBreaker,
  MessagesUpstreamClient,
  PublicHostResolver,
  createResultLinks,
  createResultStore,
  createCallbackLinks,
  createUpstreamAdapters,
  type AdapterRegistry,
  type ResultStore,
} from '@gmg/upstream';
import { cancelRouter } from './cancel/cancel.routes';
import { UpstreamCanceller } from './cancel/upstream-cancel';
import { callbackUrlMiddleware } from './webhooks/callback-url';
import { FailedAuthThrottle, authenticateThrottled } from './auth/failed-auth.throttle';
import { KeyAuthenticator } from './auth/key-authenticator';
import type { ApiEdgeConfig } from './config';
import { accessLog } from './http/access-log';
import { errorHandler, routeNotFound } from './http/error-handler';
import { BodyBudget } from './http/body-budget';
import { jsonBody } from './http/json-body';
import { avatarRouter } from './avatar/avatar.router';
import { authMiddleware } from './middleware/auth.middleware';
import { requireAdminToken } from './middleware/admin-token';
import { submitMetricsMiddleware } from './observability/submit-metrics';
import { createIdempotencyMiddleware } from './middleware/idempotency';
import { TASK_ANSWER_SHAPES } from './middleware/task-answer.shapes';
import { createRateLimitMiddleware } from './middleware/rate-limit';
import { createMediaHostCheck, type MediaHostCheck } from './use-cases/media-host.check';
import { PriceTableCache } from './pricing/price-table.cache';
import { catalogRouter } from './routes/catalog.routes';
import { createManagementRouter } from './management/management.router';
import { generationsRouter } from './routes/generations.routes';
import { healthRouter } from './routes/health.routes';
import { tasksRouter } from './routes/tasks.routes';
import { artgenRouter } from './artgen/artgen.routes';
import { LocalDiskUploadStorage } from './uploads/local-disk.storage';
import { DEFAULT_SIDE_LIMITS, type UploadImageDeps } from './uploads/upload-image.use-case';
import type { UploadStorage } from './uploads/upload-storage';
import { createUploadsRouter } from './uploads/uploads.router';
import { UploadSweeper } from './uploads/upload-sweeper';
import { UploadQuota } from './uploads/upload-quota';
import { QUEUE_DASHBOARD_PATH, createQueueDashboard } from './admin/queue-dashboard';
import { apiDocsRouter } from './openapi/api-docs.router';
import { uploadSizeLookup } from './uploads/upload-size';
import { ChatCallSweeper } from './messages/chat-call.sweeper';
import { CreditLeaseBook } from './messages/credit-lease.book';
import { ChannelListCache } from './channels/channel-list.cache';
import { channelCarryCheck } from './use-cases/channel-carry.check';
import { messagesRouter } from './routes/chat.router';
import { mountPlayground } from './playground';
import { createConsoleRouter } from './console/console.static';
import { createResultsRouter } from './results/results.router';
import { createUpstreamCallbacksRouter } from './upstream-callbacks/upstream-callbacks.router';

/** Everything the app needs, built by main.ts (or a test) and injected: createApp never connects or listens. */
export interface AppDeps {
  config: ApiEdgeConfig;
  logger: Logger;
  dataSource: DataSource;
  /** A ready client connection: task views, readiness, rate limits. */
  redis: Redis;
  producers: Pick<Producers, 'enqueueTask' | 'requestSettlement' | 'removeTaskJob'> & Partial<Pick<Producers, 'accepting' | 'hasRoom'>>;
  /** True while shutting down: /readyz answers 503 so the load balancer stops sending traffic. */
  isDraining?: () => boolean;
  /** Where uploaded images live; default: local disk at `config.uploadDir` (see docs/uploads.md for object storage). */
  uploadStorage?: UploadStorage;
  /** Where the workers keep finished tasks' files (served by /v1/results); default: the store RESULT_STORE_URL names. */
  resultStore?: ResultStore;
  /** The keep-alive pools to messages upstreams (main.ts closes it at shutdown); default: a new one. */
  messagesClient?: MessagesUpstreamClient;
  /** Overrides for tests. */
  newTaskId?: () => string;
  now?: () => Date;
}

/**
 * What the edge runs besides its routes, built by createApp: main.ts starts the sweepers' timers once the server
 * listens (edge-timers.ts) and closes the lease books at shutdown; tests reach the key cache.
 */
export interface EdgeBackground {
  /** The in-process key cache (tests and management actions that must apply at once clear it). */
  readonly keyAuthenticator: KeyAuthenticator;
  /** Closes the credit leases of dead edges and releases abandoned chat calls. */
  readonly chatCallSweeper: ChatCallSweeper;
  /** This edge's credit leases: closed at shutdown so unspent money returns at once. */
  readonly creditLeases: CreditLeaseBook;
  /** This edge's task-hold leases (none when TASK_LEASE_UNITS=0): closed at shutdown like `creditLeases`. */
  readonly taskLeases: TaskLeaseBook | undefined;
  /** Removes expired uploads (UPLOAD_SWEEP_INTERVAL_MS); upload requests poke it. */
  readonly uploadSweeper: UploadSweeper;
  /** Removes local-disk results older than their links (none on object storage: its lifecycle rule does it). */
  readonly resultSweeper: UploadSweeper | undefined;
}

/** The edge: its Express app (never listening: main.ts or a test does that) and what runs beside it. */
export interface EdgeApp {
  app: Express;
  background: EdgeBackground;
}

/** What the mounting steps share, built once per app. */
interface AppParts {
  deps: AppDeps;
  tasks: TaskRepository;
  views: TaskViewStore;
  keys: KeyAuthenticator;
  /** Failed API-key authentications per client address (docs/rate-limits.md). */
  authThrottle: FailedAuthThrottle;
  /** Requests per second per API key: one limiter (and its token lease) for every route group that mounts it. */
  rateLimit: RequestHandler;
  prices: PriceTableCache;
  /** Where uploads live (one instance: the uploads router writes it, submissions read sizes from it). */
  uploads: UploadStorage;
  /** Media URL hosts resolved at submit (docs/security.md); one resolver and cache per app. */
  mediaHosts: MediaHostCheck;
  auth: RequestHandler;
  /** Bytes of large request bodies held at once (MAX_BODY_BYTES_IN_FLIGHT): every body parser waits on it. */
  bodyBudget: BodyBudget;
  /** JSON, then `callback_url` taken out and checked (docs/webhooks.md): the body parsers of every task submission. */
  submitBody: RequestHandler[];
  submitGuards: RequestHandler[];
  /** The upload pipeline on that store: uploads, and large inline media of submissions (stored once, referenced by URL). */
  uploadPipeline: UploadImageDeps;
  uploadSweeper: UploadSweeper;
  /** Messages channels per model and group, cached (MESSAGES_CHANNEL_CACHE_TTL_MS): the messages route and the catalog. */
  messagesChannels: ChannelListCache<MessagesChannel>;
  /** Every task protocol (libs/upstream): the submit-time carry check, cancel and the channel test. */
  adapters: AdapterRegistry;
  /** The messages channels' client: the relay and the channel test. */
  messagesClient: MessagesUpstreamClient;
  /** Task channels per model and group (the carry check), cached as long as the messages channels. */
  taskChannels: ChannelListCache<ChannelRecord>;
  /** One credit-lease book and one crash sweeper for messages and chat completions. */
  creditLeases: CreditLeaseBook;
  chatCallSweeper: ChatCallSweeper;
  taskLeases: TaskLeaseBook | undefined;
}

/**
 * The edge's composition: the parts, then one mount per router under the prefix its paths share, in the order
 * Express tries them (the busiest first: the poll, then the submissions; docs/benchmarks.md). Several routers share
 * `/v1`: a request under it is offered to each of them in turn until one matches.
 */
export function createApp(deps: AppDeps): EdgeApp {
  const parts = appParts(deps);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Which X-Forwarded-For hops to believe for req.ip (TRUST_PROXY; docs/configuration.md): the failed-auth throttle counts by it.
  app.set('trust proxy', deps.config.trustProxy);
  mountObservability(app, deps);
  mountUploads(app, parts);
  const resultSweeper = mountResults(app, deps);
  mountUpstreamCallbacks(app, deps);
  app.use('/v1', parts.auth);
  mountTasks(app, parts);
  mountGenerations(app, parts);
  mountMessages(app, parts);
  mountCancel(app, parts);
  mountAvatar(app, parts);
  mountArtgen(app, parts);
  mountCatalog(app, parts);
  mountProbes(app, parts);
  mountDocs(app, deps);
  mountManagement(app, parts);
  mountQueueDashboard(app, parts);
  mountPlayground(app);
  mountConsole(app, deps);
  app.use(routeNotFound);
  app.use(errorHandler(deps.logger));
  const { keys, chatCallSweeper, creditLeases, taskLeases, uploadSweeper } = parts;
  return { app, background: { keyAuthenticator: keys, chatCallSweeper, creditLeases, taskLeases, uploadSweeper, resultSweeper } };
}

/** Builds what the routers share; connects nothing (the data source and Redis come in ready). */
function appParts(deps: AppDeps): AppParts {
  const { config, dataSource, redis, logger } = deps;
  const keys = new KeyAuthenticator(new ApiKeyRepository(dataSource), { ttlMs: config.authCacheTtlMs, staleIfErrorMs: config.authStaleIfErrorMs });
  // each submit route's cap comes from the contracts it serves (MAX_BODY_BYTES stays the ceiling)
  const bodyBudget = new BodyBudget(config.maxBodyBytesInFlight, config.bodyBudgetWaitMs, config.bodyBudgetKeyShare);
  const json = jsonBody(config.maxBodyBytes, maxBodyBytesOfPath, bodyBudget);
  const uploads = deps.uploadStorage ?? new LocalDiskUploadStorage(config.uploadDir);
  // Media URL hosts (and callback_url hosts) resolved at submit: one resolver and cache per app (docs/security.md).
  const mediaHosts = createMediaHostCheck(
    new PublicHostResolver({ servers: config.mediaDnsServers, timeoutMs: config.mediaDnsTimeoutMs, cacheTtlMs: config.mediaDnsCacheTtlMs }),
    logger,
  );
  const authThrottle = new FailedAuthThrottle({
    redis,
    prefix: config.queuePrefix,
    logger,
    limit: config.failedAuthLimit,
    windowSeconds: config.failedAuthWindowSeconds,
    blockSeconds: config.failedAuthBlockSeconds,
  });
  const rateLimit = createRateLimitMiddleware({ redis, prefix: config.queuePrefix, logger });
  const taskLeases = taskLeaseBook(deps);
  // the two lease books of this edge give each other the account's idle money before either refuses a request
  const chat = messagesBook(deps, taskLeases);
  const tasks = new HoldBatchingTaskRepository(dataSource, {
    leases: taskLeases,
    idle: chat.creditLeases,
    hotMs: config.taskLeaseIdleMs,
    logger,
  });
  return {
    deps,
    tasks,
    taskLeases,
    views: new TaskViewStore(redis, config.queuePrefix),
    keys,
    authThrottle,
    rateLimit,
    prices: new PriceTableCache(new PriceRepository(dataSource), config.priceCacheTtlMs),
    uploads,
    uploadSweeper: new UploadSweeper(uploads, config.uploadSweepIntervalMs, logger, deps.now),
    messagesChannels: new ChannelListCache<MessagesChannel>((m, g) => new ChatCallRepository(dataSource).channels(m, g), config.messagesChannelCacheTtlMs),
    adapters: createUpstreamAdapters({ timeoutMs: config.upstreamTimeoutMs }),
    messagesClient: deps.messagesClient ?? new MessagesUpstreamClient(config.messagesRelay),
    taskChannels: new ChannelListCache<ChannelRecord>((m, g) => new ChannelRepository(dataSource).serving(m, g), config.messagesChannelCacheTtlMs),
    mediaHosts,
    auth: authMiddleware(keys, authThrottle),
    bodyBudget,
    uploadPipeline: {
      storage: uploads,
      publicBaseUrl: config.publicBaseUrl,
      limits: { maxBytes: config.uploadMaxBytes, ttlSeconds: config.uploadTtlSeconds, ...DEFAULT_SIDE_LIMITS },
      now: deps.now,
    },
    submitBody: [...json, callbackUrlMiddleware({ allowInsecure: config.webhookAllowInsecure, hostCheck: mediaHosts })],
    submitGuards: submitGuards(deps, json, tasks, rateLimit),
    ...chat,
  };
}

/**
 * Task holds paid from this edge's credit leases: the hold statements touch no account row, so edges holding for
 * one busy account never wait for each other (docs/reliability.md, "Hot accounts"); expired leases of a dead edge
 * are closed by any edge's ChatCallSweeper. None with TASK_LEASE_UNITS=0.
 * Submissions that arrive while a hold statement is in flight are held together, of any accounts (hold-batcher.ts).
 */
function taskLeaseBook({ config, dataSource, logger }: AppDeps): TaskLeaseBook | undefined {
  return config.taskLeaseMinor
    ? new TaskLeaseBook(new CreditLeaseRepository(dataSource), {
        targetMinor: config.taskLeaseMinor,
        logger,
        ttlMs: config.taskLeaseTtlMs,
        idleCloseMs: config.taskLeaseIdleMs,
      })
    : undefined;
}

/**
 * Submission guards, in this order: requests per second (cheapest, before any body work); Idempotency-Key (parses
 * the body itself to fingerprint it; a replay ends here, costing no in-flight slot and no money; an acknowledgement
 * naming its task is kept as a reference to it, rebuilt from Postgres on replay). The in-flight limit per key is
 * checked by the hold statement itself (TaskRepository.createWithHold): no query of its own.
 */
function submitGuards({ config, redis, logger }: AppDeps, json: RequestHandler[], tasks: TaskRepository, rateLimit: RequestHandler): RequestHandler[] {
  return [
    submitMetricsMiddleware,
    rateLimit,
    createIdempotencyMiddleware({
      redis,
      prefix: config.queuePrefix,
      bodyParsers: json,
      logger,
      taskAnswers: { get: (id) => tasks.get(id), shapes: TASK_ANSWER_SHAPES },
    }),
  ];
}

/** The credit-lease book of messages and chat completions, and the sweeper of dead edges' leases and abandoned calls. */
function messagesBook({ config, dataSource, logger }: AppDeps, taskLeases: TaskLeaseBook | undefined): Pick<AppParts, 'creditLeases' | 'chatCallSweeper'> {
  const chatCalls = new ChatCallRepository(dataSource);
  const leaseRepo = new CreditLeaseRepository(dataSource);
  return {
    creditLeases: new CreditLeaseBook({
      leases: leaseRepo,
      calls: chatCalls,
      logger,
      targetMinor: config.messagesLeaseMinor,
      ttlMs: config.messagesLeaseTtlMs,
      idle: taskLeases,
    }),
    chatCallSweeper: new ChatCallSweeper(chatCalls, leaseRepo, Math.max(1000, Math.floor(config.messagesLeaseTtlMs / 3)), logger),
  };
}

/**
 * Every request: request ids and access logs (health probes not logged), the request's trace span (X-Trace-Id,
 * when tracing is on), HTTP metrics by route pattern.
 */
function mountObservability(app: Express, deps: AppDeps): void {
  const probe = (path: string) => path === '/healthz' || path === '/readyz' || path === '/metrics';
  app.use(traceRequestsMiddleware(routeOf, probe));
  app.use(httpMetricsMiddleware({ ignore: probe }));
  app.use(accessLog(deps.logger, (path) => path === '/healthz' || path === '/readyz'));
}

/**
 * Uploads sit before the /v1 key auth: reading an upload link is public (its unguessable name is the
 * capability); the POST authenticates itself with the same middleware.
 */
function mountUploads(app: Express, { deps, auth, rateLimit, uploadPipeline, uploadSweeper, bodyBudget }: AppParts): void {
  const { config, redis, logger } = deps;
  app.use(
    '/v1/uploads',
    createUploadsRouter({
      ...uploadPipeline,
      authenticate: auth,
      guards: [rateLimit],
      logger,
      budget: bodyBudget,
      sweeper: uploadSweeper,
      // uploads only: inline media of a submission is paid for with its task and deleted when the task is refused
      quota: new UploadQuota(redis, config.queuePrefix, { maxBytes: config.uploadQuotaBytes, maxFiles: config.uploadQuotaFiles }, logger),
    }),
  );
}

/**
 * Results kept by us (docs/upstreams/results.md): `/v1/results/<key>` sits before the /v1 key auth, its signed link
 * being the capability. On a local disk the edge also sweeps what outlived its links (by a day).
 */
function mountResults(app: Express, { config, logger, now, resultStore }: AppDeps): UploadSweeper | undefined {
  const store =
    resultStore ??
    createResultStore(config.resultStoreUrl, {
      endpoint: config.resultStoreEndpoint,
      region: config.resultStoreRegion,
      forcePathStyle: config.resultStoreForcePathStyle,
    });
  const links = createResultLinks({ publicBaseUrl: config.publicBaseUrl, signingKey: config.resultSigningKey });
  const keepMs = (config.resultLinkTtlSeconds + 86_400) * 1000;
  const sweep = store.sweepOlderThan?.bind(store);
  const sweeper =
    sweep &&
    new UploadSweeper({ sweepExpired: (at = new Date()) => sweep(new Date(at.getTime() - keepMs)) }, config.uploadSweepIntervalMs, logger, now, 'results');
  app.use('/v1/results', createResultsRouter({ store, links, logger, now }));
  return sweeper || undefined;
}

/**
 * POST /v1/upstream-callbacks/<token>: vendors' callbacks (issue 35 item 8), before the /v1 key auth like the result
 * links (the signed token is the capability). Mounted only with UPSTREAM_CALLBACK_SIGNING_KEY: without it, 404.
 */
function mountUpstreamCallbacks(app: Express, { config, redis, logger, now }: AppDeps): void {
  if (!config.upstreamCallbackSigningKey) return;
  // the base is the workers' business (they build the URLs); verifying needs the key only
  const links = createCallbackLinks({ baseUrl: config.publicBaseUrl, signingKey: config.upstreamCallbackSigningKey });
  // the path is UPSTREAM_CALLBACKS_PATH, where the workers' URLs point (a literal here: test/docs/openapi.test.ts reads mounts)
  app.use('/v1/upstream-callbacks', createUpstreamCallbacksRouter({ links, redis, prefix: config.queuePrefix, shards: config.queueShards, logger, now }));
}

/** GET /v1/tasks/<id>: the poll, the busiest route (answered from the Redis task view). */
function mountTasks(app: Express, { deps, views, tasks }: AppParts): void {
  app.use('/v1/tasks', tasksRouter({ views, tasks, toUnifiedTask, logger: deps.logger }));
}

/** The dependencies every task-submitting router shares. */
function submitDeps({ deps, tasks, prices, views, mediaHosts, uploads, uploadPipeline, adapters, taskChannels }: AppParts) {
  return {
    tasks,
    prices,
    views,
    mediaHosts,
    carry: channelCarryCheck(taskChannels, adapters),
    uploadSizes: uploadSizeLookup(uploads, deps.config.publicBaseUrl),
    media: uploadPipeline,
    queue: deps.producers,
    logger: deps.logger,
    publicBaseUrl: deps.config.publicBaseUrl,
    taskTimeoutSeconds: deps.config.taskTimeoutSeconds,
    newTaskId: deps.newTaskId ?? newTaskId,
    now: deps.now,
  };
}

/** POST /v1/images/generations and /v1/videos/generations. */
function mountGenerations(app: Express, parts: AppParts): void {
  app.use('/v1', generationsRouter({ ...submitDeps(parts), assets: new AssetRepository(parts.deps.dataSource) }, parts.submitBody, parts.submitGuards));
}

/**
 * POST /v1/messages (docs/messages.md), /v1/messages/count_tokens and /v1/chat/completions (docs/chat.md, the same
 * call translated): synchronous, their own caches and crash sweeper, one credit-lease book and one circuit breaker.
 */
function mountMessages(app: Express, { deps, rateLimit, prices, bodyBudget, messagesChannels, messagesClient, creditLeases, chatCallSweeper }: AppParts): void {
  const { config, logger } = deps;
  const gate = new CircuitBreaker({ failureThreshold: config.messagesRelay.breakerFailures, cooldownMs: config.messagesRelay.breakerCooldownMs });
  // the breaker is the fast path; the shared health (Postgres) sets refused keys aside and cools failing channels
  const health = new ChannelHealthReporter(new ChannelHealthRepository(deps.dataSource, config.channelBackOff), gate, (err) =>
    logger.warn({ err: (err as Error).message }, 'channel health write failed'),
  );
  app.use(
    '/v1',
    messagesRouter({
      call: {
        book: creditLeases,
        client: messagesClient,
        gate,
        health,
        limits: config.messagesRelay,
        logger,
        newTaskId: deps.newTaskId ?? newTaskId,
        keySpend: new ApiKeyRepository(deps.dataSource),
      },
      channels: messagesChannels,
      prices,
      sweeper: chatCallSweeper,
      maxBodyBytes: config.maxBodyBytes,
      budget: bodyBudget,
      guards: [rateLimit],
    }),
  );
}

/** POST /v1/tasks/<id>/cancel and the art suite's /v1/artgen/<id>/cancel. */
function mountCancel(app: Express, { deps, tasks, views, adapters }: AppParts): void {
  app.use(
    '/v1',
    cancelRouter({
      tasks,
      views,
      queue: deps.producers,
      logger: deps.logger,
      upstream: new UpstreamCanceller(new ChannelRepository(deps.dataSource), adapters),
    }),
  );
}

function mountAvatar(app: Express, parts: AppParts): void {
  const ds = parts.deps.dataSource;
  app.use(
    '/v1/motion2',
    avatarRouter({ ...submitDeps(parts), groups: new AssetGroupRepository(ds), assets: new AssetRepository(ds) }, parts.submitBody, parts.submitGuards),
  );
}

function mountArtgen(app: Express, parts: AppParts): void {
  app.use(
    '/v1/artgen',
    artgenRouter(
      { ...submitDeps(parts), assets: new AssetRepository(parts.deps.dataSource), describeWaitMs: parts.deps.config.artgenDescribeWaitMs },
      parts.submitBody,
      parts.submitGuards,
    ),
  );
}

/** GET /v1/models, /v1/models/<model>/schema, /v1/model-schema. */
function mountCatalog(app: Express, { messagesChannels }: AppParts): void {
  app.use(
    '/v1',
    catalogRouter({
      // a custom name is served by POST /v1/messages and /v1/chat/completions only on channels that list it by name (routes/chat.router.ts)
      // (unknown while Postgres is away: not listed, the rest of the catalog still answers)
      customChat: (name, group) =>
        messagesChannels.get(name, group).then(
          (cs) => cs.some((c) => c.models?.includes(name) ?? false),
          () => false,
        ),
    }),
  );
}

/** /healthz, /readyz and /metrics (Prometheus; Bearer ADMIN_TOKEN). */
function mountProbes(app: Express, { deps, authThrottle }: AppParts): void {
  const { logger, dataSource, redis } = deps;
  app.use(
    healthRouter({
      probes: { redis: () => checkRedisReady(redis) },
      // A slow Postgres (or a PgBouncer restart) must not take every edge out at once: polls answer from Redis.
      degradable: { postgres: () => pingDatabase(dataSource), redis_memory: () => checkRedisMemory(redis) },
      liveness: { redis: () => redis.status !== 'end' },
      isDraining: deps.isDraining ?? (() => false),
      logger,
    }),
  );
  app.get('/metrics', requireAdminToken(deps.config.adminToken, authThrottle), metricsHandler);
}

/** GET /openapi.json and /docs (the API's reference page). */
function mountDocs(app: Express, { config }: AppDeps): void {
  app.use(apiDocsRouter({ publicBaseUrl: config.publicBaseUrl }));
}

/**
 * Management API (spec 4.4, `{success, message, data}`): its own auth (ADMIN_TOKEN or an API key through the
 * same cached authenticator) and its own error envelope.
 */
function mountManagement(app: Express, { deps, keys, authThrottle, adapters, messagesClient }: AppParts): void {
  app.use(
    '/api',
    createManagementRouter({
      ds: deps.dataSource,
      adminToken: deps.config.adminToken,
      authenticate: authenticateThrottled(keys, authThrottle),
      authThrottle,
      // a revocation applies at once on this replica; other replicas within AUTH_CACHE_TTL_MS
      onKeyRevoked: () => keys.clear(),
      // POST /api/channels/{id}/test: real calls through each channel's protocol
      trial: { adapters, messages: messagesClient },
      logger: deps.logger,
    }),
  );
}

/**
 * GET /console: the web console's static build (docs/management-api.md, "Console routes"). Result media may come from
 * PUBLIC_BASE_URL's origin (our signed result links, when it is not this one) and CONSOLE_MEDIA_SOURCES (vendor links).
 */
function mountConsole(app: Express, { config }: AppDeps): void {
  app.use(
    '/console',
    createConsoleRouter({ dir: config.consoleDir, mediaSources: [new URL(config.publicBaseUrl).origin, ...(config.consoleMediaSources ?? [])] }),
  );
}

/** GET /admin/queues: the BullMQ dashboard behind the admin token (docs/api.md). */
function mountQueueDashboard(app: Express, { deps, authThrottle }: AppParts): void {
  const { config, redis } = deps;
  app.use(
    QUEUE_DASHBOARD_PATH,
    createQueueDashboard({
      adminToken: config.adminToken,
      redis,
      prefix: config.queuePrefix,
      shards: config.queueShards,
      allowWrites: config.adminQueuesWrite,
      throttle: authThrottle,
    }),
  );
}
