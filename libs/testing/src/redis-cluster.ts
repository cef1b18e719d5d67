import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './service-process';
import { waitFor } from './wait-for';

const run = promisify(execFile);

export interface LocalRedisNode {
  port: number;
  proc: ChildProcess;
}

export interface LocalRedisCluster {
  /** `127.0.0.1:p1,127.0.0.1:p2,...` (REDIS_CLUSTER_NODES). */
  nodesEnv: string;
  nodes: LocalRedisNode[];
  /** redis-cli against one node (`cluster info`, `info memory`, ...). */
  cli(port: number, ...args: string[]): Promise<string>;
  /** kill -9 one node: no persistence, no goodbye. */
  kill9(port: number): Promise<void>;
  /** Stops every node and removes the data directory. */
  stop(): Promise<void>;
}

/**
 * A Redis Cluster on this machine for tests, chaos and benchmarks: `masters` primaries (and `replicasPerMaster`
 * replicas each) as `redis-server --cluster-enabled yes` processes on FREE ports (never the machine's own 6379), no
 * persistence, `noeviction`, joined with `redis-cli --cluster create --cluster-yes`; resolves once every node
 * reports `cluster_state:ok`. Short node timeout so a killed primary fails over within seconds.
 */
export async function startLocalRedisCluster(opts: { masters?: number; replicasPerMaster?: number; nodeTimeoutMs?: number } = {}): Promise<LocalRedisCluster> {
  const masters = opts.masters ?? 3;
  const replicas = opts.replicasPerMaster ?? 0;
  const dir = mkdtempSync(path.join(tmpdir(), 'gmg-redis-cluster-'));
  const nodes: LocalRedisNode[] = [];
  const cli = async (port: number, ...args: string[]): Promise<string> =>
    (await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 30_000 })).stdout;
  const stop = async (): Promise<void> => {
    await Promise.all(
      nodes.map(async (n) => {
        if (n.proc.exitCode !== null || n.proc.signalCode !== null) return;
        const exited = new Promise((r) => n.proc.once('exit', r));
        n.proc.kill('SIGKILL');
        await exited;
      }),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      const port = await freePort();
      const proc = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--cluster-node-timeout',
          String(opts.nodeTimeoutMs ?? 2000),
          '--dir',
          dir,
          '--save',
          '',
          '--appendonly',
          'no',
          '--maxmemory-policy',
          'noeviction',
          '--protected-mode',
          'no',
        ],
        { stdio: 'ignore' },
      );
      const reap = (): void => {
        proc.kill('SIGKILL');
      };
      process.once('exit', reap);
      proc.once('exit', () => process.removeListener('exit', reap));
      nodes.push({ port, proc });
      await waitFor(async () => (await cli(port, 'ping')).trim() === 'PONG', { timeoutMs: 10_000, what: `redis-server on ${port}` });
    }
    await run('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'], {
      timeout: 60_000,
    });
    for (const n of nodes) {
      await waitFor(async () => (await cli(n.port, 'cluster', 'info')).includes('cluster_state:ok'), {
        timeoutMs: 30_000,
        what: `cluster_state:ok on ${n.port}`,
      });
    }
    // a replica that has not finished its first sync would refuse to fail over (its data counts as too old): a
    // failover test must start with every replica linked to its master
    for (const n of nodes) {
      await waitFor(
        async () => {
          const repl = await cli(n.port, 'info', 'replication');
          return !repl.includes('role:slave') || (repl.includes('master_link_status:up') && repl.includes('master_sync_in_progress:0'));
        },
        { timeoutMs: 60_000, intervalMs: 200, what: `replica ${n.port} in sync with its master` },
      );
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    nodesEnv: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
    nodes,
    cli,
    async kill9(port) {
      const n = nodes.find((x) => x.port === port);
      if (!n || n.proc.exitCode !== null || n.proc.signalCode !== null) return;
      const exited = new Promise((r) => n.proc.once('exit', r));
      n.proc.kill('SIGKILL');
      await exited;
    },
    stop,
  };
}

export interface LocalRedis {
  port: number;
  url: string;
  cli(...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

/** One standalone `redis-server` on a free port (no persistence, noeviction, `maxmemory` when given), for tests. */
export async function startLocalRedis(opts: { maxmemory?: number } = {}): Promise<LocalRedis> {
  const port = await freePort();
  const proc = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--maxmemory-policy',
      'noeviction',
      '--maxmemory',
      String(opts.maxmemory ?? 0),
    ],
    { stdio: 'ignore' },
  );
  const reap = (): void => {
    proc.kill('SIGKILL');
  };
  process.once('exit', reap);
  proc.once('exit', () => process.removeListener('exit', reap));
  const cli = async (...args: string[]): Promise<string> =>
    (await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 30_000 })).stdout;
  await waitFor(async () => (await cli('ping')).trim() === 'PONG', { timeoutMs: 10_000, what: `redis-server on ${port}` });
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    cli,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGKILL');
      await exited;
    },
  };
}
