/**
 * The capacity model: measured costs (scripts/fleet/costs.json, written by a fleet run with FLEET_COSTS_OUT) → what a
 * given load needs, and every limit that load runs into. Pure: no I/O. docs/capacity.md is generated from it
 * (scripts/fleet/capacity.ts) and every fleet run checks it against what it measured.
 *
 * Its inputs (issue 38 item 4): a **fixed cost per process** (each service's CPU, RSS, Redis commands while idle:
 * claim loops, BullMQ blocking and stall checks, sweeps, scrapes, GC), **steps per task** (one upstream submit and the
 * polls until the task ends: upstream duration ÷ poll cadence), the **upstream round trip** (how long a step holds a
 * worker slot) and per-operation costs (edge per submit, poll, messages call; worker per step; billing per
 * settlement; Redis per command; Postgres and PgBouncer per task and transaction).
 */
import { redisMaxmemoryFor } from '@gmg/queue';

export type Pool = 'image' | 'video' | 'artgen' | 'avatar';
export const MODEL_POOLS: readonly Pool[] = ['image', 'video', 'artgen', 'avatar'];

import { POLL_RTT_SECONDS, TARGET_POLL_UTILISATION } from './keda-targets';

/** A pool's upstream: mean seconds a task is open (submit to end, real time) and the mean poll cadence (s). */
export interface Upstream {
  durationS: number;
  cadenceS: number;
}

/** What each process costs with nothing asked of it (the calibration's idle window, before the day). */
export interface FixedCosts {
  seconds: number;
  /** Service group → cores of one idle process (a Redis node; Postgres with its backends; PgBouncer). */
  coresPerProcess: Record<string, number>;
  /** Service group → resident memory of one process at the end of the idle window (MiB). */
  rssMiBPerProcess: Record<string, number>;
  /** Redis commands/s one idle edge, worker or billing process sends (claim loops, BullMQ blocking, stall checks). */
  redisCmdsPerSPerProcess: number;
  /** The idle fleet's Postgres transactions/s and WAL bytes/s (sweeps, gauges, autovacuum). */
  pgTxPerS: number;
  walBytesPerS: number;
}

/** Per-operation costs, as a fleet run measures them (CPU in ms of one core), above each process's fixed cost. */
export interface Costs {
  measuredAt: string;
  machine: string;
  /**
   * The edge: one task submission; one poll of GET /v1/tasks/<id>; one /v1/messages call. Their ratios come from the
   * calibration (each alone, before the day), their level from the day: the edges' CPU over the load phase, less
   * their fixed cost, divided in those ratios among the submits, polls and messages calls the edges answered in it.
   */
  edgeMsPerSubmit: number;
  edgeMsPerPoll: number;
  edgeMsPerMessage?: number;
  /** /v1/messages calls per task in the run (the synchronous path: the edge's work, no pool's). */
  messagesPerTask?: number;
  /** Per pool: one worker step (an upstream submit or one upstream poll), and steps per task at the run's upstream. */
  workerMsPerStep: Record<Pool, number>;
  stepsPerTask: Record<Pool, number>;
  /** Billing: one settlement attempt (gmg_settlements_total), with the run's share of webhook deliveries; attempts per task. */
  billingMsPerSettlement: number;
  settlementsPerTask?: number;
  webhookShare: number;
  /**
   * Redis: commands per task (all but client polls, worker steps and the fixed background); per client poll; CPU
   * per command; bytes per task kept.
   */
  redisCmdsPerTask: number;
  redisCmdsPerPoll: number;
  /** Redis commands and Postgres transactions per worker step, when the run fitted them (else the worker bench's). */
  redisCmdsPerStep?: number;
  pgTxPerStep?: number;
  redisUsPerCmd: number;
  redisBytesPerTask: number;
  /** Postgres: transactions (less worker steps'), CPU, WAL and table bytes per task; mean transaction time. */
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
  /** Fixed cost per process, and the replicas per service group of the run (older costs files have neither). */
  fixed?: FixedCosts;
  processes?: Record<string, number>;
  /** The run's upstream per pool, in real seconds (measured time open ÷ the run's compression), and that compression. */
  upstream?: Record<Pool, Upstream>;
  compression?: number;
}

/** One fleet run's check of the model (FLEET_CHECK_OUT): what docs/capacity.md shows under "Checked against the fleet run". */
export interface FleetCheck {
  at: string;
  machine: string;
  /** The 1-minute load average at the start and the end of the load phase (six sessions may share the cores). */
  loadAverage: [number, number];
  /** The FLEET_* variables the run was started with (the command that repeats it). */
  env: Record<string, string>;
  rate: number;
  minutes: number;
  completedPerS: number;
  gatewayCores: number;
  upstream: string;
  within: number;
  of: number;
  text: string;
  result: string;
}

/** The shape of a fleet: replicas per service group (the fixed costs are paid once per process). */
export type Processes = Record<string, number>;

export interface Load {
  tasksPerDay: number;
  peakFactor: number;
  mix: Record<Pool, number>;
  pollsPerTask: number;
  /** /v1/messages calls per task (the costs' own run by default). */
  messagesPerTask?: number;
  /** Per pool: the upstream's time open and poll cadence (the costs' own run by default) → steps per task, open tasks. */
  upstream?: Partial<Record<Pool, Upstream>>;
  /** The upstream round trip a step holds a worker slot for (s): keda-targets.ts POLL_RTT_SECONDS by default. */
  upstreamRttS?: number;
  /** QUEUE_SHARDS per queue (pools, billing, webhook); 1 each by default, as k8s/base ships. */
  shards?: Partial<Record<Pool | 'billing' | 'webhook', number>>;
}

export interface Limit {
  what: string;
  /** The peak tasks/s at which this part is full (at TARGET_UTILISATION unless it says otherwise). */
  maxRate: number;
}

export interface Sizing {
  peakTasksPerS: number;
  stepsPerTask: Record<Pool, number>;
  /** Tasks open at the peak (rate × time open): the due sets and open views. */
  openTasks: number;
  cores: Record<string, number>;
  pods: Record<string, number>;
  /** Per pool: pods the poll and submit slots need (steps/s × round trip ÷ concurrency at the KEDA utilisation). */
  slotPods: Record<Pool, number>;
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
  /** Tasks per second one core of the whole gateway (edge, pools, billing, Redis, PgBouncer, Postgres) carries at the peak. */
  tasksPerSPerCore: number;
  /** Every limit, lowest first; `firstBottleneck` is the lowest. */
  limits: Limit[];
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
/** One Postgres primary of this many cores: the one part that does not scale out. */
export const PG_PRIMARY_CORES = 16;
/**
 * The deployment's fixed numbers (k8s/base: api-edge.yaml maxReplicas, worker-*.yaml and billing.yaml
 * maxReplicaCount, pgbouncer.yaml replicas, pgbouncer.ini max_db_connections, config.yaml WORKER_CONCURRENCY).
 */
export const DEPLOYMENT = Object.freeze({
  maxPods: { 'api-edge': 20, worker: 20, billing: 5 },
  pgbouncerReplicas: 2,
  pgbouncerServerConnections: 40,
  workerConcurrency: 50,
});
/**
 * Measured elsewhere, quoted here (docs/benchmarks.md): one worker poll step costs 1.5 Redis commands and 0.14
 * Postgres transactions (worker bench, K = 2); one billing queue shard settled 3,396 tasks/s with one process
 * (billing bench: a lower bound for the slot); one retention worker moves 6,233 tasks/s (docs/operations.md).
 */
export const REDIS_CMDS_PER_STEP = 1.5;
export const PG_TX_PER_STEP = 0.14;
export const SETTLEMENTS_PER_S_PER_BILLING_SHARD = 3396;
export const RETENTION_TASKS_PER_S = 6233;
/** The services whose processes send the fixed Redis background (the gateway's own, not Redis, Postgres, PgBouncer). */
const SERVICE_GROUPS = ['api-edge', 'billing', ...MODEL_POOLS.map((p) => `worker-${p}`)];

const share = (mix: Record<Pool, number>, p: Pool): number =>
  mix[p] /
  Math.max(
    1e-9,
    MODEL_POOLS.reduce((s, q) => s + mix[q], 0),
  );

/** Steps of one task: its upstream submit, then one poll per cadence until it ends (renewal mean: D ÷ T + ½). */
export function stepsFor(u: Upstream): number {
  return 1 + u.durationS / Math.max(1e-9, u.cadenceS) + 0.5;
}

/** Steps per task per pool: from the load's upstream where it names one, else the costs' own run. */
export function stepsOf(c: Costs, upstream?: Partial<Record<Pool, Upstream>>): Record<Pool, number> {
  const out = {} as Record<Pool, number>;
  for (const p of MODEL_POOLS) out[p] = upstream?.[p] ? stepsFor(upstream[p]) : c.stepsPerTask[p];
  return out;
}

export interface Shape {
  /** Replicas per service group: their fixed costs are added (none without it, or without fixed costs). */
  processes?: Processes;
  /** Steps per task per pool (the costs' own run by default). */
  stepsPerTask?: Record<Pool, number>;
}

const fixedCores = (c: Costs, processes: Processes | undefined, g: string): number => (c.fixed?.coresPerProcess[g] ?? 0) * (processes?.[g] ?? 0);

/** Fixed Redis commands/s of the fleet's service processes. */
const fixedRedisCmds = (c: Costs, processes: Processes | undefined): number =>
  (c.fixed?.redisCmdsPerSPerProcess ?? 0) * SERVICE_GROUPS.reduce((s, g) => s + (processes?.[g] ?? 0), 0);

/** Redis commands/s at `rate` tasks/s: per task, per client poll, per worker step, and the fixed background. */
export function redisCmdsAt(c: Costs, rate: number, mix: Record<Pool, number>, pollsPerTask: number, shape: Shape = {}): number {
  const steps = shape.stepsPerTask ?? c.stepsPerTask;
  const stepsPerTask = MODEL_POOLS.reduce((s, p) => s + share(mix, p) * steps[p], 0);
  return (
    rate * (c.redisCmdsPerTask + pollsPerTask * c.redisCmdsPerPoll + stepsPerTask * (c.redisCmdsPerStep ?? REDIS_CMDS_PER_STEP)) +
    fixedRedisCmds(c, shape.processes)
  );
}

/** Postgres transactions/s at `rate` tasks/s: per task, per worker step, and the idle fleet's. */
export function pgTxAt(c: Costs, rate: number, mix: Record<Pool, number>, shape: Shape = {}): number {
  const steps = shape.stepsPerTask ?? c.stepsPerTask;
  const stepsPerTask = MODEL_POOLS.reduce((s, p) => s + share(mix, p) * steps[p], 0);
  return rate * (c.pgTxPerTask + stepsPerTask * (c.pgTxPerStep ?? PG_TX_PER_STEP)) + (shape.processes && c.fixed ? c.fixed.pgTxPerS : 0);
}

/**
 * CPU cores each part needs at `rate` tasks/s (`messagesPerTask`: /v1/messages calls per task, the costs' own by
 * default): the per-operation costs, plus each process's fixed cost when `shape.processes` says how many there are.
 */
export function coresAt(
  c: Costs,
  rate: number,
  mix: Record<Pool, number>,
  pollsPerTask: number,
  messagesPerTask = c.messagesPerTask ?? 0,
  shape: Shape = {},
): Record<string, number> {
  const steps = shape.stepsPerTask ?? c.stepsPerTask;
  const fx = (g: string): number => fixedCores(c, shape.processes, g);
  const cores: Record<string, number> = {
    'api-edge': fx('api-edge') + (rate * (c.edgeMsPerSubmit + pollsPerTask * c.edgeMsPerPoll + messagesPerTask * (c.edgeMsPerMessage ?? 0))) / 1000,
    billing: fx('billing') + (rate * (c.settlementsPerTask ?? 1) * c.billingMsPerSettlement) / 1000,
  };
  for (const p of MODEL_POOLS) cores[`worker-${p}`] = fx(`worker-${p}`) + (rate * share(mix, p) * steps[p] * c.workerMsPerStep[p]) / 1000;
  const variableCmds = redisCmdsAt(c, rate, mix, pollsPerTask, { stepsPerTask: steps });
  cores.redis = fx('redis') + (variableCmds + fixedRedisCmds(c, shape.processes)) * (c.redisUsPerCmd / 1e6);
  cores.postgres = fx('postgres') + (rate * c.pgMsPerTask) / 1000;
  cores.pgbouncer = fx('pgbouncer') + (rate * (c.bouncerTxPerTask ?? c.pgTxPerTask) * c.bouncerMsPerTx) / 1000;
  return cores;
}

export function size(c: Costs, load: Load): Sizing {
  const peak = (load.tasksPerDay / 86_400) * load.peakFactor;
  const mean = load.tasksPerDay / 86_400;
  const steps = stepsOf(c, load.upstream);
  const upstream = (p: Pool): Upstream | undefined => load.upstream?.[p] ?? c.upstream?.[p];
  const rtt = load.upstreamRttS ?? POLL_RTT_SECONDS.image;
  const shards = (q: Pool | 'billing' | 'webhook'): number => Math.max(1, load.shards?.[q] ?? 1);
  const fixedPer = (g: string): number => c.fixed?.coresPerProcess[g] ?? 0;
  // the variable part (no process counted) sizes the pods; each pod then carries its own fixed cost
  const variable = coresAt(c, peak, load.mix, load.pollsPerTask, load.messagesPerTask, { stepsPerTask: steps });
  const perPod = (g: string): number => Math.max(0.05, TARGET_UTILISATION - fixedPer(g));
  const pods: Record<string, number> = {};
  const slotPods = {} as Record<Pool, number>;
  // two replicas at least of every service: one can die (or roll) while the other serves
  for (const k of ['api-edge', 'billing']) pods[k] = Math.max(2, Math.ceil(variable[k]! / perPod(k)));
  for (const p of MODEL_POOLS) {
    const stepsPerS = peak * share(load.mix, p) * steps[p];
    slotPods[p] = Math.ceil((stepsPerS * rtt) / (DEPLOYMENT.workerConcurrency * TARGET_POLL_UTILISATION));
    pods[`worker-${p}`] = Math.max(2, Math.ceil(variable[`worker-${p}`]! / perPod(`worker-${p}`)), slotPods[p]);
  }
  const processes: Processes = { ...pods, redis: 0, postgres: 1, pgbouncer: DEPLOYMENT.pgbouncerReplicas };
  const withFixed = coresAt(c, peak, load.mix, load.pollsPerTask, load.messagesPerTask, { stepsPerTask: steps, processes });
  const redisCmdsPerS = redisCmdsAt(c, peak, load.mix, load.pollsPerTask, { stepsPerTask: steps, processes });
  const redisShards = Math.max(3, Math.ceil(withFixed.redis! / (REDIS_SHARD_CORES * TARGET_UTILISATION - fixedPer('redis'))));
  const cores: Record<string, number> = { ...withFixed, redis: withFixed.redis! + fixedPer('redis') * 2 * redisShards };
  const openTasks = MODEL_POOLS.reduce((s, p) => s + peak * share(load.mix, p) * (upstream(p)?.durationS ?? 60), 0);
  const redisLoad = { tasksPerHour: mean * 3600, tasksPerDay: load.tasksPerDay, openTasks, keyedSubmitsPerDay: 0, shards: REDIS_QUEUES };
  const pgTxPerS = pgTxAt(c, peak, load.mix, { stepsPerTask: steps, processes });
  const bouncerTx = c.bouncerTxPerTask ?? c.pgTxPerTask;
  const edgePerTask =
    (c.edgeMsPerSubmit + load.pollsPerTask * c.edgeMsPerPoll + (load.messagesPerTask ?? c.messagesPerTask ?? 0) * (c.edgeMsPerMessage ?? 0)) / 1000;
  const billingPerTask = ((c.settlementsPerTask ?? 1) * c.billingMsPerSettlement) / 1000;
  const total = Object.values(cores).reduce((a, b) => a + b, 0);
  // every part that does not scale by adding pods, or that a shipped cap stops: the peak tasks/s at which it is full
  const limits: Limit[] = [
    {
      what: `Postgres primary (${PG_PRIMARY_CORES} cores at ${TARGET_UTILISATION * 100} %)`,
      maxRate: (PG_PRIMARY_CORES * TARGET_UTILISATION - fixedPer('postgres')) / (c.pgMsPerTask / 1000),
    },
    {
      what: `PgBouncer CPU (${DEPLOYMENT.pgbouncerReplicas} replicas, one thread each, at ${TARGET_UTILISATION * 100} %)`,
      maxRate: (DEPLOYMENT.pgbouncerReplicas * (TARGET_UTILISATION - fixedPer('pgbouncer'))) / ((bouncerTx * c.bouncerMsPerTx) / 1000),
    },
    {
      what: `PgBouncer → Postgres server connections (${DEPLOYMENT.pgbouncerReplicas} × ${DEPLOYMENT.pgbouncerServerConnections} busy at ${TARGET_UTILISATION * 100} %, Little's law at ${c.pgMsPerTx.toFixed(2)} ms a transaction)`,
      maxRate: (DEPLOYMENT.pgbouncerReplicas * DEPLOYMENT.pgbouncerServerConnections * TARGET_UTILISATION) / ((bouncerTx * c.pgMsPerTx) / 1000),
    },
    ...MODEL_POOLS.map((p) => ({
      // upper bound: every non-poll command of the pool's tasks counted on its queue shards' slots
      what: `Redis core of the ${p} queue (K = ${shards(p)}; QUEUE_SHARDS raises it)`,
      maxRate:
        (shards(p) * (REDIS_SHARD_CORES * TARGET_UTILISATION) * 1e6) /
        (c.redisUsPerCmd * Math.max(1e-9, share(load.mix, p) * (c.redisCmdsPerTask + steps[p] * (c.redisCmdsPerStep ?? REDIS_CMDS_PER_STEP)))),
    })),
    {
      what: `billing queue slot (K = ${shards('billing')}; ≥ ${SETTLEMENTS_PER_S_PER_BILLING_SHARD} settlements/s a shard, measured)`,
      maxRate: (shards('billing') * SETTLEMENTS_PER_S_PER_BILLING_SHARD) / (c.settlementsPerTask ?? 1),
    },
    {
      what: `webhook queue slot (K = ${shards('webhook')}; as the billing slot, for ${(c.webhookShare * 100).toFixed(0)} % of tasks)`,
      maxRate: (shards('webhook') * SETTLEMENTS_PER_S_PER_BILLING_SHARD) / Math.max(1e-9, c.webhookShare),
    },
    {
      what: `api-edge at its HPA cap (${DEPLOYMENT.maxPods['api-edge']} pods)`,
      maxRate: (DEPLOYMENT.maxPods['api-edge'] * perPod('api-edge')) / edgePerTask,
    },
    {
      what: `billing at its maxReplicaCount (${DEPLOYMENT.maxPods.billing} pods)`,
      maxRate: (DEPLOYMENT.maxPods.billing * perPod('billing')) / billingPerTask,
    },
    ...MODEL_POOLS.map((p) => {
      const perTask = share(load.mix, p) * steps[p];
      const cpu = (DEPLOYMENT.maxPods.worker * perPod(`worker-${p}`)) / ((perTask * c.workerMsPerStep[p]) / 1000);
      const slots = (DEPLOYMENT.maxPods.worker * DEPLOYMENT.workerConcurrency * TARGET_POLL_UTILISATION) / Math.max(1e-9, perTask * rtt);
      return {
        what: `worker-${p} at its maxReplicaCount (${DEPLOYMENT.maxPods.worker} pods: ${cpu <= slots ? 'CPU' : `slots, ${rtt} s a step`})`,
        maxRate: Math.min(cpu, slots),
      };
    }),
    {
      what: `retention (one worker, ${RETENTION_TASKS_PER_S} tasks/s measured, chat rows too; at the day's mean)`,
      maxRate: (RETENTION_TASKS_PER_S * load.peakFactor) / (1 + (load.messagesPerTask ?? c.messagesPerTask ?? 0)),
    },
  ].sort((a, b) => a.maxRate - b.maxRate);
  const first = limits[0]!;
  return {
    peakTasksPerS: peak,
    stepsPerTask: steps,
    openTasks,
    cores,
    pods,
    slotPods,
    redisCmdsPerS,
    redisShards,
    redisMaxmemoryGiB: redisMaxmemoryFor(redisLoad) / 2 ** 30,
    redisMaxmemoryKeyedGiB: redisMaxmemoryFor({ ...redisLoad, keyedSubmitsPerDay: load.tasksPerDay }) / 2 ** 30,
    pgTxPerS,
    // the transactions PgBouncer pools (not the server's own count, which has the sampler's and autovacuum's too)
    pgServerConnections: Math.max(10, Math.ceil((peak * bouncerTx * c.pgMsPerTx) / 1000 / TARGET_UTILISATION)),
    pgCores: cores.postgres!,
    storageGiBPerDay: (load.tasksPerDay * c.pgStorageBytesPerTask) / 2 ** 30,
    walGiBPerDay: (load.tasksPerDay * c.pgWalBytesPerTask + (c.fixed?.walBytesPerS ?? 0) * 86_400) / 2 ** 30,
    tasksPerSPerCore: peak / total,
    limits,
    firstBottleneck: `${first.what}: ${first.maxRate.toFixed(0)} tasks/s (${peak <= first.maxRate ? 'not reached at this peak' : 'EXCEEDED at this peak'})`,
  };
}
