import path from 'node:path';
import { ChannelRepository, loadPrices } from '@gmg/db';
import { createRedis } from '@gmg/queue';
import { deleteRedisPrefix } from './redis-cleanup';
import { freePort, REPO_ROOT, startService, type ServiceProcess } from './service-process';
import { createTestDatabase, TEST_REDIS_TARGET, TEST_REDIS_URL, uniqueRedisPrefix, type TestDatabase } from './test-database';

export interface SimStackOptions {
  /** createTestDatabase's name prefix. */
  database: string;
  /** The simulator's SIM_TIME_SCALE (absent: its own default, real time). */
  timeScale?: string;
  /** LOG_LEVEL of every process, the simulator's too (absent: startService's `warn`). */
  logLevel?: string;
  /** More environment for every service started with `start` (not the simulator): OTEL_EXPORTER_OTLP_ENDPOINT, QUEUE_SHARDS… */
  env?: Record<string, string>;
  /** More environment for the simulator (SIM_VENDOR_LINK_TTL_MS…). */
  simEnv?: Record<string, string>;
  /** The channel row that routes to the simulator: `sim`, for every group, unless given. */
  channel?: { name?: string; groups?: string[]; protocol?: string; apiKey?: string };
}

/** A service a stack started. */
export interface StackService {
  proc: ServiceProcess;
  /** http://127.0.0.1:<its port>: the edge's base URL; a worker's or billing's health and /metrics server. */
  url: string;
  /** Everything it was started with (the stack's common environment included), to start it again after a kill. */
  env: Record<string, string>;
}

/** A test database with infra/prices.json loaded, a key prefix of its own and the upstream simulator with its channel. */
export interface SimStack {
  db: TestDatabase;
  /** QUEUE_PREFIX of every service. */
  prefix: string;
  /** What every service gets: DATABASE_URL, REDIS_URL (the test Redis), QUEUE_PREFIX, LOG_LEVEL and options.env. */
  common: Record<string, string>;
  sim: ServiceProcess;
  simUrl: string;
  /** Every process started through the stack, the simulator first. */
  procs: ServiceProcess[];
  /**
   * Starts service `name` on a free port (api-edge listens on PORT, the workers and billing serve health on
   * HEALTH_PORT) with `common` and `env` (or `env(url)`, for a variable that names the service's own URL), and waits
   * until its /readyz answers (started: a consumer's start-up work done). `nodeArgs`: startService's Node flags.
   */
  start(name: string, env?: Record<string, string> | ((url: string) => Record<string, string>), nodeArgs?: readonly string[]): Promise<StackService>;
  /** Starts a stopped or killed service again: the same name, environment and port. */
  restart(service: StackService): Promise<StackService>;
  /** Stops every process the stack started (SIGTERM), then drops the database and deletes the prefix's Redis keys. */
  stop(): Promise<void>;
}

const portVariable = (name: string): string => (name === 'api-edge' ? 'PORT' : 'HEALTH_PORT');
/**
 * A service counts as started once ready: a worker's or billing's health server answers (/healthz) before its
 * start-up work is done (the keeper's first check, issue 38), and its /readyz says `starting` until then.
 */
const startedPath = '/readyz';

/**
 * The start every end-to-end test and benchmark shares: a priced test database, a Redis prefix, the upstream
 * simulator as a process and the channel to it. The services under test are then started with `start`. When the
 * simulator does not come up, what was made is removed again before the error is thrown.
 */
export async function startSimStack(options: SimStackOptions): Promise<SimStack> {
  const db = await createTestDatabase(options.database);
  const prefix = uniqueRedisPrefix();
  const procs: ServiceProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(procs.map((p) => p.stop()));
    await db.drop();
    // What the services left under the prefix (due polls, task views, finished jobs) would otherwise stay in the
    // shared test Redis and slow every later SCAN-based test on the machine.
    const redis = createRedis(TEST_REDIS_TARGET, 'client');
    try {
      await deleteRedisPrefix(redis, prefix);
    } finally {
      await redis.quit();
    }
  };
  try {
    await loadPrices(db.dataSource, path.join(REPO_ROOT, 'infra/prices.json'));
    const logLevel: Record<string, string> = options.logLevel ? { LOG_LEVEL: options.logLevel } : {};
    const common: Record<string, string> = { DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix, ...logLevel, ...options.env };
    const simPort = await freePort();
    const simUrl = `http://127.0.0.1:${simPort}`;
    const timeScale: Record<string, string> = options.timeScale ? { SIM_TIME_SCALE: options.timeScale } : {};
    const sim = await startService('upstream-sim', { PORT: String(simPort), ...timeScale, ...logLevel, ...options.simEnv }, `${simUrl}/healthz`);
    procs.push(sim);
    let edgeBase: string | undefined;
    // a vendor protocol is served under its own path prefix of the simulator (services/upstream-sim/src/app.ts)
    const protocol = options.channel?.protocol ?? 'gateway';
    await new ChannelRepository(db.dataSource).create({
      name: options.channel?.name ?? 'sim',
      protocol,
      baseUrl: protocol === 'gateway' ? simUrl : `${simUrl}/${protocol}`,
      apiKey: options.channel?.apiKey,
      groups: options.channel?.groups,
    });
    return {
      db,
      prefix,
      common,
      sim,
      simUrl,
      procs,
      async start(name, env = {}, nodeArgs = []) {
        const port = await freePort();
        const url = `http://127.0.0.1:${port}`;
        const own = typeof env === 'function' ? env(url) : env;
        if (name === 'api-edge') edgeBase = own.PUBLIC_BASE_URL ?? url;
        // Services started after the edge sign result links on its base, as the edge serves them (RESULT_*).
        const base: Record<string, string> = name !== 'api-edge' && edgeBase ? { PUBLIC_BASE_URL: edgeBase } : {};
        const all = { ...common, ...base, [portVariable(name)]: String(port), ...own };
        const proc = await startService(name, all, `${url}${startedPath}`, undefined, undefined, nodeArgs);
        procs.push(proc);
        return { proc, url, env: all };
      },
      async restart({ proc: { name }, url, env }) {
        const proc = await startService(name, env, `${url}${startedPath}`);
        procs.push(proc);
        return { proc, url, env };
      },
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
