import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { serviceNodeArgs } from '@gmg/config';
import { waitFor } from './wait-for';

export const REPO_ROOT = path.resolve(__dirname, '../../..');

/**
 * The result store of the services a test process starts (results kept by us, docs/upstreams/results.md): one
 * directory per test process, so an edge and the workers it serves share it, removed when the process exits; and a
 * test signing key. A caller's own RESULT_* values win.
 */
const TEST_RESULT_DIR = path.join(tmpdir(), `gmg-test-results-${process.pid}`);
let resultDirCleanup = false;
export function testResultEnv(): Record<string, string> {
  if (!resultDirCleanup) {
    resultDirCleanup = true;
    process.once('exit', () => rmSync(TEST_RESULT_DIR, { recursive: true, force: true }));
  }
  return { RESULT_STORE_URL: TEST_RESULT_DIR, RESULT_SIGNING_KEY: 'test-result-signing-key-0123456789abcdef' };
}

export interface ServiceProcess {
  name: string;
  proc: ChildProcess;
  /** Everything the process printed (bounded), for failure messages. */
  output(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process has exited. */
  stop(graceMs?: number): Promise<number | null>;
  /** kill -9: no cleanup at all. */
  kill9(): Promise<void>;
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * How startService runs a service: `tsx` (default: its TypeScript source, what is checked out) or `dist` (its
 * bundle from `npm run build`, as production runs it). GMG_SERVICE_RUNTIME=dist switches every start in a
 * process (the benchmarks set it).
 */
export type ServiceRuntime = 'tsx' | 'dist';
const defaultRuntime = (): ServiceRuntime => (process.env.GMG_SERVICE_RUNTIME === 'dist' ? 'dist' : 'tsx');

/**
 * Starts service `name` as a real process, with `env` on top of the current environment, and waits until
 * `healthUrl` answers 200.
 */
export async function startService(
  name: string,
  env: Record<string, string>,
  healthUrl: string,
  timeoutMs = 60_000,
  runtime: ServiceRuntime = defaultRuntime(),
  /** Node flags before the service's own (e.g. `--cpu-prof`, which NODE_OPTIONS does not accept). */
  nodeArgs: readonly string[] = [],
): Promise<ServiceProcess> {
  // `node --import tsx` keeps the service in this one process (the tsx CLI would run it in a child), so a
  // kill -9 really kills the service and nothing is orphaned; a bundle is one plain node process too.
  const args = serviceNodeArgs(REPO_ROOT, name, runtime);
  if (runtime === 'dist' && !existsSync(args[args.length - 1])) throw new Error(`${args[args.length - 1]} does not exist: run npm run build first`);
  // TEST_REDIS_CLUSTER=1 (test-database.ts TEST_REDIS_CLUSTER_NODES): a service pointed at the test Redis uses the cluster
  const clusterNodes = process.env.TEST_REDIS_CLUSTER_NODES;
  const onCluster =
    clusterNodes &&
    env.REDIS_URL !== undefined &&
    env.REDIS_URL === (process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379') &&
    env.REDIS_CLUSTER_NODES === undefined;
  const proc = spawn(process.execPath, [...nodeArgs, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', ...testResultEnv(), ...env, ...(onCluster ? { REDIS_CLUSTER_NODES: clusterNodes } : {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-20_000);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  // never leave a service behind when the test process itself ends
  const reap = () => proc.kill('SIGKILL');
  process.once('exit', reap);
  void exited.then(() => process.removeListener('exit', reap));
  let dead = false;
  void exited.then(() => {
    dead = true;
  });
  try {
    await Promise.race([
      waitFor(
        async () => {
          if (dead) return true;
          const r = await fetch(healthUrl).catch(() => undefined);
          return r?.ok;
        },
        { timeoutMs, intervalMs: 100, what: `${name} health at ${healthUrl}` },
      ),
      exited.then(() => undefined),
    ]);
    if (dead) throw new Error(`${name} exited during start (code ${proc.exitCode})`);
  } catch (e) {
    proc.kill('SIGKILL');
    throw new Error(`${(e as Error).message}\n--- ${name} output ---\n${out}`);
  }
  return {
    name,
    proc,
    output: () => out,
    async stop(graceMs = 10_000) {
      if (dead) return proc.exitCode;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
    async kill9() {
      if (dead) return;
      proc.kill('SIGKILL');
      await exited;
    },
  };
}
