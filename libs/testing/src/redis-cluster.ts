import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ownPort, redisClusterArgs, redisServerArgs, ServerProc } from './local-server';
import { waitFor } from './wait-for';

const run = promisify(execFile);

export interface LocalRedisNode {
  port: number;
  proc: ServerProc;
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
    await Promise.all(nodes.map((n) => n.proc.signal('SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      const port = await ownPort();
      const args = redisServerArgs(port, [...redisClusterArgs(port, opts.nodeTimeoutMs ?? 2000), '--dir', dir, '--protected-mode', 'no']);
      const proc = new ServerProc(spawn('redis-server', args, { stdio: 'ignore' }));
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
      await nodes.find((x) => x.port === port)?.proc.signal('SIGKILL');
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
  const port = await ownPort();
  const proc = new ServerProc(spawn('redis-server', redisServerArgs(port, ['--maxmemory', String(opts.maxmemory ?? 0)]), { stdio: 'ignore' }));
  const cli = async (...args: string[]): Promise<string> =>
    (await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 30_000 })).stdout;
  await waitFor(async () => (await cli('ping')).trim() === 'PONG', { timeoutMs: 10_000, what: `redis-server on ${port}` });
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    cli,
    stop: () => proc.signal('SIGKILL'),
  };
}
