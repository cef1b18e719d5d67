import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import Redis from 'ioredis';

export interface RedisHandle {
  url: string;
  source: 'REDIS_URL' | 'local server' | 'redis-server (started)' | 'redis-server (already running)';
  /** Stops what this process started; a no-op otherwise. */
  stop(): Promise<void>;
}

export interface RedisOptions {
  envUrl?: string;
  localUrl: string;
  port: number;
  confFile: string;
  dataDir: string;
  stopTimeoutMs: number;
  log: (line: string) => void;
}

const noop = async (): Promise<void> => undefined;

/** PING with no retries; true when a Redis answers (even with an auth error, which still means "it is there"). */
export async function redisAnswers(url: string, timeoutMs = 1500): Promise<boolean> {
  const r = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch (e) {
    return /NOAUTH|WRONGPASS/.test(String(e));
  } finally {
    r.disconnect();
  }
}

/** The eviction policy, or undefined when CONFIG is not allowed (managed Redis). */
export async function evictionPolicy(url: string): Promise<string | undefined> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  r.on('error', () => undefined);
  try {
    await r.connect();
    const res = (await r.config('GET', 'maxmemory-policy')) as string[];
    return res[1];
  } catch {
    return undefined;
  } finally {
    r.disconnect();
  }
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/** REDIS_URL if set; else 127.0.0.1:6379 if it answers; else a redis-server from PATH with infra/redis.conf. */
export async function resolveRedis(o: RedisOptions): Promise<RedisHandle> {
  if (o.envUrl) {
    if (!(await redisAnswers(o.envUrl))) throw new Error('REDIS_URL is set but no Redis answers there');
    return { url: o.envUrl, source: 'REDIS_URL', stop: noop };
  }
  if (await redisAnswers(o.localUrl)) return { url: o.localUrl, source: 'local server', stop: noop };

  const url = `redis://127.0.0.1:${o.port}`;
  if (await redisAnswers(url)) return { url, source: 'redis-server (already running)', stop: noop };

  mkdirSync(o.dataDir, { recursive: true });
  o.log(`no Redis at ${o.localUrl}; starting redis-server on port ${o.port} (noeviction, AOF, data in ${o.dataDir})`);
  const args = [o.confFile, '--port', String(o.port), '--bind', '127.0.0.1', '--dir', o.dataDir, '--daemonize', 'no', '--logfile', ''];
  // Own process group: a Ctrl-C in the terminal reaches only the orchestrator, which stops Redis last.
  const child: ChildProcess = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const relay = (chunk: Buffer): void => {
    for (const line of chunk.toString().split('\n')) if (/#|\*\*\*|>>>|WARNING|error|fatal/i.test(line)) o.log(line.trim());
  };
  child.stdout?.on('data', relay);
  child.stderr?.on('data', relay);

  const up = await Promise.race([
    waitUntil(() => redisAnswers(url, 500), 10_000),
    exited.then(() => {
      throw new Error(`redis-server exited at start (code ${child.exitCode}); see its output above`);
    }),
    spawnError.then((e) => {
      throw new Error(
        (e as NodeJS.ErrnoException).code === 'ENOENT'
          ? 'no Redis reachable and no redis-server on PATH; install Redis or set REDIS_URL'
          : `redis-server failed to start: ${e.message}`,
      );
    }),
  ]);
  if (!up) {
    child.kill('SIGKILL');
    throw new Error(`redis-server did not answer on port ${o.port} within 10 s`);
  }
  return {
    url,
    source: 'redis-server (started)',
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM'); // Redis flushes the AOF on SIGTERM.
      const timer = setTimeout(() => child.kill('SIGKILL'), o.stopTimeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
