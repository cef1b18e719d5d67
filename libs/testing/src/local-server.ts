import { execFileSync, type ChildProcess } from 'node:child_process';
import { userInfo } from 'node:os';
import { Redis } from 'ioredis';
import { freePort } from './service-process';

/**
 * What the tests, the chaos suite and the fleet share when they run servers of their own (redis-server, postgres,
 * pgbouncer) next to the machine's: the process handle, the ports, the user, redis-server's flags and its probe.
 */

/** The machine's own Redis and Postgres: a server of a test, the chaos suite or the fleet never takes these. */
const SHARED_PORTS = new Set([6379, 5432]);

/** A free loopback port that is never one of the machine's shared server ports. */
export async function ownPort(): Promise<number> {
  for (let i = 0; i < 20; i++) {
    const p = await freePort();
    if (!SHARED_PORTS.has(p)) return p;
  }
  throw new Error('no free port');
}

/** A server process started here, with its exit as a promise; SIGKILLed if this process exits first. */
export class ServerProc {
  readonly exited: Promise<void>;
  constructor(readonly child: ChildProcess) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const reap = (): void => {
      child.kill('SIGKILL');
    };
    process.once('exit', reap);
    void this.exited.then(() => process.removeListener('exit', reap));
  }
  get pid(): number | undefined {
    return this.child.pid;
  }
  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  /** Sends `sig`, SIGKILL after `timeoutMs`, resolves once the process has exited (at once when it already had). */
  async signal(sig: NodeJS.Signals, timeoutMs = 30_000): Promise<void> {
    if (!this.alive) return;
    this.child.kill(sig);
    const t = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(t);
  }
}

/** Postgres and PgBouncer refuse to run as root: then they run as the `postgres` system user (the packages create it). */
export function serverUserWhenRoot(): { uid: number; gid: number } | undefined {
  if (userInfo().uid !== 0) return undefined;
  return { uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()) };
}

/**
 * `redis-server` arguments for a throw-away server: loopback only, no persistence (a restart comes back empty),
 * `noeviction` (as production: a full Redis refuses writes instead of dropping queue keys); then `extra`.
 */
export function redisServerArgs(port: number, extra: string[] = []): string[] {
  return ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction', ...extra];
}

/** The flags that make a node of a Redis Cluster; `busPort` when the cluster bus needs a port of its own. */
export function redisClusterArgs(port: number, nodeTimeoutMs: number, busPort?: number): string[] {
  const bus = busPort === undefined ? [] : ['--cluster-port', String(busPort)];
  return ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', String(nodeTimeoutMs), ...bus];
}

/** Whether a Redis answers PING on this loopback port (one short-lived connection, no retries). */
export async function redisAnswers(port: number): Promise<boolean> {
  const c = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return (await c.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    c.disconnect();
  }
}
