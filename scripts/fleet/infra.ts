/**
 * The fleet's own data tier, never the machine's servers (127.0.0.1:6379 / :5432 are refused): a Redis Cluster of
 * 3 masters with one replica each (or one standalone redis-server), PgBouncer in transaction mode, and a Postgres of
 * its own (test/chaos/infra.ts's ChaosPostgres: initdb on a free port in a temporary directory).
 */
import { execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { Client } from 'pg';
import { ownPort, redisAnswers, redisClusterArgs, redisServerArgs, ServerProc, serverUserWhenRoot, waitFor } from '@gmg/testing';

export interface RedisNode {
  port: number;
  proc: ServerProc;
}

/** What the services are given: the env of the topology (names fixed by issue #22) and a client for the fleet. */
export interface RedisTopology {
  kind: 'cluster' | 'standalone';
  env: Record<string, string>;
  nodes: RedisNode[];
  client(): Redis | Cluster;
  /** Master nodes now (the cluster's view; the standalone server itself). */
  masters(): Promise<RedisNode[]>;
  /** Every node answers and, for a cluster, all 16384 slots are served. */
  healthy(): Promise<boolean>;
  restart(node: RedisNode): Promise<void>;
  stop(): Promise<void>;
}

async function launchRedis(port: number, dir: string, extra: string[]): Promise<ServerProc> {
  mkdirSync(dir, { recursive: true });
  const args = redisServerArgs(port, ['--dir', dir, '--logfile', path.join(dir, 'redis.log'), ...extra]);
  const proc = new ServerProc(spawn('redis-server', args, { stdio: 'ignore' }));
  await waitFor(async () => (await redisAnswers(port)) || undefined, { timeoutMs: 10_000, intervalMs: 50, what: `redis-server on ${port}` });
  return proc;
}

async function nodeCommand(port: number, ...args: string[]): Promise<string> {
  const c = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 1000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return String(await c.call(args[0]!, ...args.slice(1)));
  } finally {
    c.disconnect();
  }
}

export async function startStandaloneRedis(root: string): Promise<RedisTopology> {
  const port = await ownPort();
  const dir = path.join(root, `redis-${port}`);
  const node: RedisNode = { port, proc: await launchRedis(port, dir, []) };
  const url = `redis://127.0.0.1:${port}`;
  return {
    kind: 'standalone',
    env: { REDIS_URL: url },
    nodes: [node],
    client: () => new Redis(url, { maxRetriesPerRequest: null }),
    masters: async () => [node],
    healthy: () => redisAnswers(port),
    async restart(n) {
      n.proc = await launchRedis(n.port, dir, []);
    },
    stop: () => node.proc.signal('SIGTERM', 10_000),
  };
}

/**
 * 3 masters + 3 replicas (`redis-cli --cluster create --cluster-replicas 1`); the cluster bus on a port of its own
 * (`cluster-port`, Redis ≥ 7), a 2 s node timeout so a killed master fails over within seconds.
 */
export async function startRedisCluster(root: string, masters = 3, replicas = 1): Promise<RedisTopology> {
  const count = masters * (1 + replicas);
  const specs: Array<{ port: number; bus: number; dir: string }> = [];
  for (let i = 0; i < count; i++) {
    const port = await ownPort();
    const bus = await ownPort();
    specs.push({ port, bus, dir: path.join(root, `redis-${port}`) });
  }
  const extra = (s: { port: number; bus: number }): string[] => [...redisClusterArgs(s.port, 2000, s.bus), '--cluster-require-full-coverage', 'no'];
  const nodes: RedisNode[] = await Promise.all(specs.map(async (s) => ({ port: s.port, proc: await launchRedis(s.port, s.dir, extra(s)) })));
  execFileSync('redis-cli', ['--cluster', 'create', ...specs.map((s) => `127.0.0.1:${s.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'], {
    stdio: 'ignore',
    timeout: 60_000,
  });
  const startup = nodes.map((n) => ({ host: '127.0.0.1', port: n.port }));
  const topo: RedisTopology = {
    kind: 'cluster',
    env: { REDIS_CLUSTER_NODES: startup.map((n) => `${n.host}:${n.port}`).join(',') },
    nodes,
    client: () => new Cluster(startup, { redisOptions: { maxRetriesPerRequest: null } }),
    async masters() {
      const out: RedisNode[] = [];
      for (const n of nodes) {
        if (!n.proc.alive) continue;
        const role = await nodeCommand(n.port, 'ROLE').catch(() => '');
        if (role.startsWith('master')) out.push(n);
      }
      return out;
    },
    async healthy() {
      const alive = nodes.filter((n) => n.proc.alive);
      const infos = await Promise.all(alive.map((n) => nodeCommand(n.port, 'CLUSTER', 'INFO').catch(() => '')));
      return infos.length > 0 && infos.every((i) => /cluster_state:ok/.test(i) && /cluster_slots_ok:16384/.test(i));
    },
    async restart(n) {
      const s = specs.find((x) => x.port === n.port)!;
      n.proc = await launchRedis(n.port, s.dir, extra(s));
    },
    stop: async () => {
      await Promise.all(nodes.map((n) => n.proc.signal('SIGTERM', 10_000)));
    },
  };
  // ready: every slot served and every replica in sync with its master (a replica that never synced cannot be
  // promoted, so a master killed before that would not fail over)
  const synced = async (): Promise<boolean> => {
    const infos = await Promise.all(nodes.map((n) => nodeCommand(n.port, 'INFO', 'replication').catch(() => '')));
    return infos.filter((i) => /role:slave/.test(i) && /master_link_status:up/.test(i) && /master_sync_in_progress:0/.test(i)).length === masters * replicas;
  };
  await waitFor(async () => ((await topo.healthy()) && (await synced())) || undefined, {
    timeoutMs: 60_000,
    intervalMs: 200,
    what: 'redis cluster state ok, replicas in sync',
  });
  return topo;
}

export interface Bouncer {
  port: number;
  proc: ServerProc;
  /** The DATABASE_URL the services use (through PgBouncer). */
  url: string;
  /** SHOW POOLS / SHOW STATS of the admin console. */
  show(what: 'POOLS' | 'STATS'): Promise<Array<Record<string, string>>>;
  stop(): Promise<void>;
}

/** PgBouncer 1.x in transaction mode in front of `db` (docs: pgbouncer.org/config.html). */
export async function startPgBouncer(root: string, pgPort: number, db: string, poolSize: number): Promise<Bouncer> {
  const port = await ownPort();
  const dir = path.join(root, 'pgbouncer');
  mkdirSync(dir, { recursive: true });
  const ini = [
    '[databases]',
    `${db} = host=127.0.0.1 port=${pgPort} dbname=${db}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${path.join(dir, 'users.txt')}`,
    'pool_mode = transaction',
    'max_client_conn = 4000',
    `default_pool_size = ${poolSize}`,
    'reserve_pool_size = 5',
    'admin_users = postgres',
    'stats_users = postgres',
    `logfile = ${path.join(dir, 'pgbouncer.log')}`,
    // node-postgres and the pg helper send these at start-up; PgBouncer forwards only what it knows
    'ignore_startup_parameters = extra_float_digits,options,statement_timeout,lock_timeout,idle_in_transaction_session_timeout',
  ].join('\n');
  writeFileSync(path.join(dir, 'pgbouncer.ini'), `${ini}\n`);
  writeFileSync(path.join(dir, 'users.txt'), '"postgres" ""\n');
  const ids = serverUserWhenRoot();
  if (ids) {
    chownSync(dir, ids.uid, ids.gid);
    for (const f of ['pgbouncer.ini', 'users.txt']) chownSync(path.join(dir, f), ids.uid, ids.gid);
  }
  const proc = new ServerProc(spawn('pgbouncer', [path.join(dir, 'pgbouncer.ini')], { stdio: 'ignore', ...ids }));
  const url = `postgres://postgres@127.0.0.1:${port}/${db}`;
  const show = async (what: 'POOLS' | 'STATS'): Promise<Array<Record<string, string>>> => {
    const c = new Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/pgbouncer`, connectionTimeoutMillis: 2000 });
    c.on('error', () => undefined);
    await c.connect();
    try {
      return (await c.query(`SHOW ${what}`)).rows as Array<Record<string, string>>;
    } finally {
      await c.end().catch(() => undefined);
    }
  };
  await waitFor(
    async () =>
      (await show('POOLS').then(
        () => true,
        () => false,
      )) || undefined,
    { timeoutMs: 15_000, intervalMs: 100, what: `pgbouncer on ${port}` },
  );
  return { port, proc, url, show, stop: () => proc.signal('SIGTERM', 10_000) };
}
