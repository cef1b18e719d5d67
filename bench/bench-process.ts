import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { serviceNodeArgs } from '@gmg/config';
import { REPO_ROOT, testResultEnv, waitFor } from '@gmg/testing';

/**
 * Starts `script` (a path from the repo root) as `node --import tsx [args] script` and waits for its /healthz; a
 * service's main.ts runs as startService would run it (its bundle when GMG_SERVICE_RUNTIME=dist, bench/run.ts).
 */
export async function startNode(script: string, port: number, env: Record<string, string>, args: string[] = [], root = REPO_ROOT): Promise<ChildProcess> {
  const service = /^services\/([^/]+)\/src\/main\.ts$/.exec(script)?.[1];
  // another checkout (BENCH_BASELINE) runs with the node flags of its own revision: an A/B compares what each ships
  const argsOf = root === REPO_ROOT ? serviceNodeArgs : await baselineArgsOf(root);
  const run = service
    ? argsOf(root, service, process.env.GMG_SERVICE_RUNTIME === 'dist' || root !== REPO_ROOT ? 'dist' : 'tsx')
    : ['--import', 'tsx', path.join(root, script)];
  // `args` go after the service's own flags, just before the script: a flag given there (BENCH_EDGE_NODE_ARGS)
  // overrides SERVICE_NODE_FLAGS' value of it (the last value of a V8 flag wins)
  const proc = spawn(process.execPath, [...run.slice(0, -1), ...args, ...run.slice(-1)], {
    cwd: root,
    // the result store the services need (a test directory and key, as startService gives them); the caller's wins
    env: { ...process.env, ...testResultEnv(), ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  process.once('exit', () => proc.kill('SIGKILL'));
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok, { timeoutMs: 60_000, intervalMs: 100, what: script });
  return proc;
}

export async function stop(proc: ChildProcess | undefined): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  const t = setTimeout(() => proc.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(t);
}

/** The `serviceNodeArgs` of another checkout (its libs/config/src/runtime.ts, loaded through tsx). */
async function baselineArgsOf(root: string): Promise<typeof serviceNodeArgs> {
  const mod = (await import(path.join(root, 'libs', 'config', 'src', 'runtime.ts'))) as { serviceNodeArgs: typeof serviceNodeArgs };
  return mod.serviceNodeArgs;
}
