/**
 * The capacity model: measured per-operation costs (scripts/fleet/costs.json, written by a fleet run with
 * FLEET_COSTS_OUT) → what a given load needs. Pure: no I/O. docs/capacity.md is generated from it
 * (scripts/fleet/capacity.ts) and every fleet run checks it against what it measured.
 */
import { redisMaxmemoryFor } from '@gmg/queue';

export type Pool = 'image' | 'video' | 'artgen' | 'avatar';
export const MODEL_POOLS: readonly Pool[] = ['image', 'video', 'artgen', 'avatar'];

/** Per-operation costs, as a fleet run measures them (CPU in ms of one core). */
export interface Costs {
  measuredAt: string;
  machine: string;
  /**
   * The edge: one task submission; one poll of GET /v1/tasks/<id>; one /v1/messages call. Their ratios come from the
   * calibration (each alone, before the day), their level from the day: the edges' CPU over the load phase divided
   * in those ratios among the submits, polls and messages calls the edges answered in it.
   */
  edgeMsPerSubmit: number;
  edgeMsPerPoll: number;
  edgeMsPerMessage?: number;
  /** /v1/messages calls per task in the run (the synchronous path: the edge's work, no pool's). */
  messagesPerTask?: number;
  /** Per pool: one worker step (an upstream submit or one upstream poll), and steps per task at the run's cadence. */
  workerMsPerStep: Record<Pool, number>;
  stepsPerTask: Record<Pool, number>;
  /** Billing: one settlement attempt (gmg_settlements_total), with the run's share of webhook deliveries; attempts per task. */
  billingMsPerSettlement: number;
  settlementsPerTask?: number;
  webhookShare: number;
  /** Redis: commands per task (everything but client polls) and per client poll; CPU per command; bytes per task kept. */
  redisCmdsPerTask: number;
  redisCmdsPerPoll: number;
  redisUsPerCmd: number;
  redisBytesPerTask: number;
  /** Postgres: transactions, CPU, WAL and table bytes per task; mean transaction time (server connection held). */
  pgTxPerTask: number;
  pgMsPerTask: number;
  pgWalBytesPerTask: number;
  pgStorageBytesPerTask: number;
  pgMsPerTx: number;
  /** PgBouncer: CPU per transaction it pooled (SHOW STATS total_xact_count), and those transactions per task. */
  bouncerMsPerTx: number;
  bouncerTxPerTask?: number;
  /** The run's own mix (share of tasks per pool) and client polls per task: the model's defaults. */
  mix: Record<Pool, number>;
  pollsPerTask: number;
}

export interface Load {
  tasksPerDay: number;
  peakFactor: number;
  mix: Record<Pool, number>;
  pollsPerTask: number;
  /** /v1/messages calls per task (the costs' own run by default). */
  messagesPerTask?: number;
}

export interface Sizing {
  peakTasksPerS: number;
  cores: Record<string, number>;
  pods: Record<string, number>;
  redisCmdsPerS: number;
  redisShards: number;
  /** Redis maxmemory for the whole fleet (every master together), by redisMaxmemoryFor; and with every submit keyed. */
  redisMaxmemoryGiB: number;
  redisMaxmemoryKeyedGiB: number;
  pgTxPerS: number;
  pgServerConnections: number;
  pgCores: number;
  storageGiBPerDay: number;
  walGiBPerDay: number;
  /** Tasks per second one core of the whole gateway (edge, pools, billing, Redis, PgBouncer, Postgres) carries. */
  tasksPerSPerCore: number;
  firstBottleneck: string;
}

/** What a pod or a server may use of a core before it is counted full (headroom for bursts and failover). */
export const TARGET_UTILISATION = 0.6;
/** A Redis shard is one core (Redis executes commands on one thread). */
const REDIS_SHARD_CORES = 1;
/**
 * Queues Redis holds as shipped (K = 1 per pool): four pools, billing, webhook. Redis memory is sized by the one
 * model, libs/queue redisMaxmemoryFor (docs/operations.md, "Redis memory"), never by a constant of its own here.
 */
const REDIS_QUEUES = 6;
/** Seconds a task is open in the steady state (the operations table's "open tasks (60 s each)"). */
const OPEN_SECONDS = 60;
/** One Postgres primary of this many cores: the one part that does not scale out. */
export const PG_PRIMARY_CORES = 16;

const share = (mix: Record<Pool, number>, p: Pool): number =>
  mix[p] /
  Math.max(
    1e-9,
    MODEL_POOLS.reduce((s, q) => s + mix[q], 0),
  );

/** CPU cores each part needs at `rate` tasks/s (`messagesPerTask`: /v1/messages calls per task, the costs' own by default). */
export function coresAt(
  c: Costs,
  rate: number,
  mix: Record<Pool, number>,
  pollsPerTask: number,
  messagesPerTask = c.messagesPerTask ?? 0,
): Record<string, number> {
  const cores: Record<string, number> = {
    'api-edge': (rate * (c.edgeMsPerSubmit + pollsPerTask * c.edgeMsPerPoll + messagesPerTask * (c.edgeMsPerMessage ?? 0))) / 1000,
    billing: (rate * (c.settlementsPerTask ?? 1) * c.billingMsPerSettlement) / 1000,
  };
  for (const p of MODEL_POOLS) cores[`worker-${p}`] = (rate * share(mix, p) * c.stepsPerTask[p] * c.workerMsPerStep[p]) / 1000;
  cores.redis = (rate * (c.redisCmdsPerTask + pollsPerTask * c.redisCmdsPerPoll) * c.redisUsPerCmd) / 1e6;
  cores.postgres = (rate * c.pgMsPerTask) / 1000;
  cores.pgbouncer = (rate * (c.bouncerTxPerTask ?? c.pgTxPerTask) * c.bouncerMsPerTx) / 1000;
  return cores;
}

export function size(c: Costs, load: Load): Sizing {
  const peak = (load.tasksPerDay / 86_400) * load.peakFactor;
  const mean = load.tasksPerDay / 86_400;
  const cores = coresAt(c, peak, load.mix, load.pollsPerTask, load.messagesPerTask);
  const pods: Record<string, number> = {};
  // two replicas at least of every service: one can die (or roll) while the other serves
  for (const k of ['api-edge', 'billing', ...MODEL_POOLS.map((p) => `worker-${p}`)]) pods[k] = Math.max(2, Math.ceil(cores[k]! / TARGET_UTILISATION));
  const redisCmdsPerS = peak * (c.redisCmdsPerTask + load.pollsPerTask * c.redisCmdsPerPoll);
  const redisShards = Math.max(3, Math.ceil(cores.redis! / (REDIS_SHARD_CORES * TARGET_UTILISATION)));
  const redisLoad = { tasksPerHour: mean * 3600, tasksPerDay: load.tasksPerDay, openTasks: mean * OPEN_SECONDS, keyedSubmitsPerDay: 0, shards: REDIS_QUEUES };
  const pgTxPerS = peak * c.pgTxPerTask;
  const total = Object.values(coresAt(c, 1, load.mix, load.pollsPerTask, load.messagesPerTask)).reduce((a, b) => a + b, 0);
  // the parts that do not scale by adding pods: one Postgres primary, and one queue's Redis shard (a queue's keys
  // share one hash slot, so the busiest queue shard is served by one Redis core; upper bound: every non-poll command
  // of an image task counted on that shard, though its task view lives in another slot)
  const imageShare = share(load.mix, 'image');
  const limits = [
    {
      what: `Postgres primary (${PG_PRIMARY_CORES} cores at ${TARGET_UTILISATION * 100} %)`,
      maxRate: (PG_PRIMARY_CORES * TARGET_UTILISATION * 1000) / c.pgMsPerTask,
    },
    {
      what: 'one Redis shard holding the image queue (unsharded)',
      maxRate: (REDIS_SHARD_CORES * TARGET_UTILISATION * 1e6) / (c.redisUsPerCmd * Math.max(1e-9, imageShare * c.redisCmdsPerTask)),
    },
  ].sort((a, b) => a.maxRate - b.maxRate);
  const first = limits[0]!;
  return {
    peakTasksPerS: peak,
    cores,
    pods,
    redisCmdsPerS,
    redisShards,
    redisMaxmemoryGiB: redisMaxmemoryFor(redisLoad) / 2 ** 30,
    redisMaxmemoryKeyedGiB: redisMaxmemoryFor({ ...redisLoad, keyedSubmitsPerDay: load.tasksPerDay }) / 2 ** 30,
    pgTxPerS,
    // the transactions PgBouncer pools (not the server's own count, which has the sampler's and autovacuum's too)
    pgServerConnections: Math.max(10, Math.ceil((peak * (c.bouncerTxPerTask ?? c.pgTxPerTask) * c.pgMsPerTx) / 1000 / TARGET_UTILISATION)),
    pgCores: cores.postgres!,
    storageGiBPerDay: (load.tasksPerDay * c.pgStorageBytesPerTask) / 2 ** 30,
    walGiBPerDay: (load.tasksPerDay * c.pgWalBytesPerTask) / 2 ** 30,
    tasksPerSPerCore: 1 / total,
    firstBottleneck: `${first.what}: ${first.maxRate.toFixed(0)} tasks/s (${peak <= first.maxRate ? 'not reached at this peak' : 'EXCEEDED at this peak'})`,
  };
}
