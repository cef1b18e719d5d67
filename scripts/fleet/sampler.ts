/**
 * Reads the fleet's counters at the edges of each reporting window: every process's CPU (utime + stime) and RSS from
 * /proc, Redis INFO of every node, PgBouncer's SHOW POOLS / SHOW STATS, Postgres's pg_stat_database and pg_stat_wal,
 * the tasks that reached a terminal state (by completed_at, the database's own clock), and from each worker's and
 * billing replica's /metrics their upstream steps, settlements and the workers' poll lateness histogram. One sample is
 * a snapshot; a row is the difference of two.
 */
import { Client } from 'pg';
import { Redis } from 'ioredis';
import { readFileSync } from 'node:fs';
import type { HistogramBuckets } from '@gmg/observability';
import { cpuSeconds, memMiB } from '../../bench/proc-stats';
import type { Bouncer, RedisTopology } from './infra';
import { WorkerLateness } from './lateness';
import { sumSamples } from '@gmg/observability';
import { Monotonic, metricsText } from './metrics-scrape';

export interface Snapshot {
  at: number;
  /** process label → CPU seconds (cumulative; a restarted process starts again at 0: `restartOffset` keeps it monotonic) */
  cpu: Record<string, number>;
  rss: Record<string, number>;
  /** node port → total_commands_processed */
  redisCommands: Record<string, number>;
  redisMasters: string[];
  redisMemory: number;
  pgXacts: number;
  pgWalBytes: number;
  pgBackends: number;
  bouncerClients: number;
  bouncerServers: number;
  bouncerWaiting: number;
  bouncerXacts: number;
  completed: number;
  failed: number;
  /** Server connections running a transaction at this instant (PgBouncer sv_active). */
  bouncerActive: number;
  /** pg_database_size of the fleet's database. */
  dbBytes: number;
  /** Worker steps (upstream submits + polls) per pool, and settlements, summed over replicas (monotonic). */
  steps: Record<string, number>;
  settlements: number;
  /** Worker poll lateness (gmg_poll_lateness_seconds), cumulative, summed over every worker process and pool. */
  lateness: HistogramBuckets;
}

export interface Proc {
  label: string;
  pid: () => number | undefined;
  /** Count the process's children too (Postgres: the postmaster's backends). */
  tree?: boolean;
}

/** A service replica's metrics endpoint: `worker-image#1` → its health port's /metrics. */
export interface MetricsTarget {
  label: string;
  service: string;
  url: string;
}

function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function treeCpu(pid: number): number {
  let s = cpuSeconds(pid);
  for (const c of children(pid)) {
    try {
      s += cpuSeconds(c);
    } catch {
      // a backend that just exited
    }
  }
  return s;
}

const num = (s: unknown): number => Number(s ?? 0) || 0;

/** Commands processed per node (port → counter), which nodes are masters, and the masters' memory. */
async function redisInfo(topo: RedisTopology): Promise<{ commands: Record<string, number>; masters: string[]; memory: number }> {
  const commands: Record<string, number> = {};
  const masters: string[] = [];
  let memory = 0;
  for (const n of topo.nodes) {
    if (!n.proc.alive) continue;
    const c = new Redis(n.port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 1000 });
    c.on('error', () => undefined);
    try {
      await c.connect();
      const info = await c.info();
      commands[String(n.port)] = num(/total_commands_processed:(\d+)/.exec(info)?.[1]);
      // masters only: a replica holds a copy of the same keys and replays the same writes
      if (!/role:master/.test(info)) continue;
      masters.push(String(n.port));
      memory += num(/used_memory:(\d+)/.exec(info)?.[1]);
    } catch {
      // a node being killed: its counters are missing from this sample (the row says so through the fault column)
    } finally {
      c.disconnect();
    }
  }
  return { commands, masters, memory };
}

export class Sampler {
  private readonly cpuBase = new Map<string, { pid: number; offset: number; last: number }>();
  private readonly counters = new Monotonic();
  private readonly lateness = new WorkerLateness();

  constructor(
    private readonly procs: () => Proc[],
    private readonly redis: RedisTopology,
    private readonly bouncer: Bouncer,
    private readonly pgDirectUrl: string,
    private readonly dbName: string,
    private readonly metrics: () => MetricsTarget[],
  ) {}

  /** CPU seconds of a label, summed over the processes that held it (a replaced process adds to its predecessor's). */
  private cpuOf(p: Proc): number {
    const pid = p.pid();
    const b = this.cpuBase.get(p.label) ?? { pid: pid ?? 0, offset: 0, last: 0 };
    if (pid && pid !== b.pid) {
      b.offset += b.last;
      b.pid = pid;
      b.last = 0;
    }
    try {
      if (pid) b.last = p.tree ? treeCpu(pid) : cpuSeconds(pid);
    } catch {
      // the process is gone (killed): its last reading stays
    }
    this.cpuBase.set(p.label, b);
    return b.offset + b.last;
  }

  async snapshot(): Promise<Snapshot> {
    const at = Date.now();
    const cpu: Record<string, number> = {};
    const rss: Record<string, number> = {};
    for (const p of this.procs()) {
      cpu[p.label] = this.cpuOf(p);
      const pid = p.pid();
      try {
        rss[p.label] = pid ? memMiB(pid, 'VmRSS') : NaN;
      } catch {
        rss[p.label] = NaN;
      }
    }
    const r = await redisInfo(this.redis);
    const pg = new Client({ connectionString: this.pgDirectUrl, connectionTimeoutMillis: 5000, application_name: 'gmg-fleet-sampler' });
    await pg.connect();
    // undefined when a query returned no row: that reading counts 0
    let db: Record<string, string> | undefined;
    let wal: Record<string, string> | undefined;
    let done: Record<string, string> | undefined;
    try {
      [db] = (
        await pg.query<Record<string, string>>(
          `SELECT xact_commit + xact_rollback AS x, numbackends AS b, pg_database_size(datname)::text AS size FROM pg_stat_database WHERE datname = $1`,
          [this.dbName],
        )
      ).rows;
      [wal] = (await pg.query<Record<string, string>>(`SELECT wal_bytes::text AS w FROM pg_stat_wal`)).rows;
      [done] = (
        await pg.query<
          Record<string, string>
        >(`SELECT count(*) FILTER (WHERE status = 'completed')::int AS c, count(*) FILTER (WHERE status = 'failed')::int AS f
                                  FROM tasks WHERE pool <> 'chat' AND status IN ('completed','failed')`)
      ).rows;
    } finally {
      await pg.end().catch(() => undefined);
    }
    let pools: Array<Record<string, string>> = [];
    let stats: Array<Record<string, string>> = [];
    try {
      pools = (await this.bouncer.show('POOLS')).filter((p) => p.database === this.dbName);
      stats = (await this.bouncer.show('STATS')).filter((s) => s.database === this.dbName);
    } catch {
      // PgBouncer's console busy: the row shows zeros for it
    }
    const steps: Record<string, number> = {};
    let settlements = 0;
    await Promise.all(
      this.metrics().map(async (m) => {
        const text = await metricsText(m.url);
        const reading = (metric: string): number | undefined => (text === undefined ? undefined : (sumSamples(text, metric) ?? 0));
        if (m.service === 'billing') {
          settlements += this.counters.add(m.label, reading('gmg_settlements_total'));
        } else {
          const pool = m.service.replace(/^worker-/, '');
          steps[pool] = (steps[pool] ?? 0) + this.counters.add(m.label, reading('gmg_upstream_requests_total'));
          this.lateness.add(m.label, text);
        }
      }),
    );
    return {
      at,
      cpu,
      rss,
      steps,
      settlements,
      lateness: this.lateness.total(),
      bouncerActive: pools.reduce((s, p) => s + num(p.sv_active), 0),
      dbBytes: num(db?.size),
      redisCommands: r.commands,
      redisMasters: r.masters,
      redisMemory: r.memory,
      pgXacts: num(db?.x),
      pgWalBytes: num(wal?.w),
      pgBackends: num(db?.b),
      bouncerClients: pools.reduce((s, p) => s + num(p.cl_active) + num(p.cl_waiting) + num(p.cl_idle), 0),
      bouncerServers: pools.reduce((s, p) => s + num(p.sv_active) + num(p.sv_idle) + num(p.sv_used) + num(p.sv_tested) + num(p.sv_login), 0),
      bouncerWaiting: pools.reduce((s, p) => s + num(p.cl_waiting), 0),
      bouncerXacts: stats.reduce((s, x) => s + num(x.total_xact_count), 0),
      completed: num(done?.c),
      failed: num(done?.f),
    };
  }
}

/** Commands the masters processed between two snapshots; a node restarted in between counts from 0. */
export function redisCommandsBetween(a: Snapshot, b: Snapshot): number {
  let n = 0;
  for (const port of b.redisMasters) {
    const cur = b.redisCommands[port] ?? 0;
    const prev = a.redisCommands[port];
    n += prev !== undefined && cur >= prev ? cur - prev : cur;
  }
  return n;
}
