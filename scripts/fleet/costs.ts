/**
 * Per-operation costs from a fleet run, and the capacity model's check against it.
 *
 * - Calibration (before the day, FLEET_CALIBRATE_S each): the edges alone under a fixed concurrency of polls, then
 *   of image submits, then of /v1/messages calls, after an idle window that measures the background (workers' and
 *   billing's idle Redis commands, the edges' timers): the ratios of the edge's CPU per poll, per submit and per
 *   messages call, and Redis commands per poll. Alone and at a fixed concurrency an operation costs less than in
 *   the day's sparse mixed traffic, so the calibration gives only the ratios.
 * - The day (the load phase, the same window the check measures): every cost is the phase's total of a resource
 *   divided by the count of what drove it in that phase — the edges' CPU divided among the submits, polls and
 *   messages calls they answered in the calibration's ratios; worker CPU per step (gmg_upstream_requests_total) and
 *   steps per task; billing CPU per settlement attempt (gmg_settlements_total) and attempts per task; PgBouncer CPU
 *   per pooled transaction (SHOW STATS) and those per task; Redis commands and bytes, Postgres transactions, CPU,
 *   WAL per task; database bytes per task (to the end of the drain).
 * - The check: the reference costs (scripts/fleet/costs.json, from an earlier run) predict, for this run's own load
 *   (its accepted tasks/s, mix, client polls and messages calls per task), each part's CPU and the Redis and
 *   Postgres rates; each prediction is compared with what this run measured (target: within 25 %).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { Pool as HttpPool } from 'undici';
import { REPO_ROOT } from '@gmg/testing';
import {
  MODEL_POOLS,
  PG_TX_PER_STEP,
  REDIS_CMDS_PER_STEP,
  coresAt,
  pgTxAt,
  redisCmdsAt,
  type Costs,
  type FixedCosts,
  type Pool,
  type Processes,
  type Upstream,
} from './capacity-model';
import type { FleetConfig } from './config';
import type { Account, Driver } from './driver';
import { groupOf } from './report';
import { redisCommandsBetween, type Sampler, type Snapshot } from './sampler';

export const COSTS_FILE = path.join(__dirname, 'costs.json');

export interface Calibration {
  edgeMsPerSubmit: number;
  edgeMsPerPoll: number;
  edgeMsPerMessage: number;
  redisCmdsPerPoll: number;
  /** The edges' CPU while nothing was asked of them (cores, both together). */
  edgeIdleCores: number;
  /** /v1/messages calls answered in the calibration: recorded and captured like the day's (the end-of-run checks count them). */
  messagesAnswered: number;
  /** Each process's cost with nothing asked of the fleet (the first window, before any task). */
  fixed: FixedCosts;
}

/** Replicas per service group among a snapshot's processes (`worker-image#2` → worker-image; a Redis node each). */
export function processCounts(s: Snapshot): Processes {
  const n: Processes = {};
  for (const k of Object.keys(s.cpu)) n[groupOf(k)] = (n[groupOf(k)] ?? 0) + 1;
  return n;
}

const SERVICE_GROUPS = ['api-edge', 'billing', ...MODEL_POOLS.map((p) => `worker-${p}`)];

/** The idle window `a`…`b`: each group's CPU per process, its RSS, the Redis background per service process. */
export function fixedCostsOf(a: Snapshot, b: Snapshot): FixedCosts {
  const seconds = Math.max(0.001, (b.at - a.at) / 1000);
  const n = processCounts(b);
  const coresPerProcess: Record<string, number> = {};
  const rssMiBPerProcess: Record<string, number> = {};
  for (const g of Object.keys(n)) {
    coresPerProcess[g] = cpuOfGroup(a, b, g) / seconds / n[g]!;
    const rss = Object.entries(b.rss).filter(([k, v]) => groupOf(k) === g && Number.isFinite(v));
    rssMiBPerProcess[g] = rss.reduce((s, [, v]) => s + v, 0) / Math.max(1, rss.length);
  }
  const services = SERVICE_GROUPS.reduce((s, g) => s + (n[g] ?? 0), 0);
  return {
    seconds,
    coresPerProcess,
    rssMiBPerProcess,
    redisCmdsPerSPerProcess: redisCommandsBetween(a, b) / seconds / Math.max(1, services),
    pgTxPerS: (b.pgXacts - a.pgXacts) / seconds,
    walBytesPerS: (b.pgWalBytes - a.pgWalBytes) / seconds,
  };
}

/** Everything the check needs from the run: its load and what each part used. */
export interface MeasuredCosts extends Costs {
  run: {
    seconds: number;
    completedPerS: number;
    cores: Record<string, number>;
    redisCmdsPerS: number;
    pgTxPerS: number;
    walBytesPerS: number;
    /**
     * The same from the start of the load phase to the end of the drain: all the work the phase's tasks caused, also
     * what a fleet that fell behind did after the phase (the model's check reads this when present).
     */
    toEnd?: {
      seconds: number;
      tasksPerS: number;
      stepsPerTask: Record<Pool, number>;
      cores: Record<string, number>;
      redisCmdsPerS: number;
      pgTxPerS: number;
      walBytesPerS: number;
    };
  };
}

const edgeCpu = (s: Snapshot): number =>
  Object.entries(s.cpu)
    .filter(([k]) => groupOf(k) === 'api-edge')
    .reduce((a, [, v]) => a + v, 0);

/** `concurrency` loops of `fn` for `ms` and at most `max` calls; returns how many answered 200. */
async function burst(ms: number, max: number, concurrency: number, fn: () => Promise<boolean>): Promise<number> {
  const end = Date.now() + ms;
  let ok = 0;
  let started = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (started < max && Date.now() < end) {
        started++;
        if (await fn().catch(() => false)) ok++;
      }
    }),
  );
  return ok;
}

export async function calibrateAndCost(cfg: FleetConfig, edges: string[], accounts: Account[], sampler: Sampler): Promise<Calibration> {
  const pools = edges.map((u) => new HttpPool(u, { connections: 8 }));
  const key = accounts[1]?.key ?? accounts[0]!.key;
  let rr = 0;
  const req = async (method: 'GET' | 'POST', p: string, body?: string): Promise<{ status: number; json: unknown }> => {
    const headers = {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(p === '/v1/messages' ? { 'anthropic-version': '2023-06-01' } : {}),
    };
    const r = await pools[rr++ % pools.length]!.request({ method, path: p, headers, body });
    const text = await r.body.text();
    return { status: r.statusCode, json: text ? (JSON.parse(text) as unknown) : undefined };
  };
  const ms = cfg.calibrateS * 1000;
  try {
    // the fixed cost: every process with nothing asked of the fleet (no task open, no request): claim loops, BullMQ
    // blocking and stall checks, sweeps, the sampler's own scrapes, GC
    const f0 = await sampler.snapshot();
    await new Promise((r) => setTimeout(r, cfg.idleS * 1000));
    const f1 = await sampler.snapshot();
    const fixed = fixedCostsOf(f0, f1);
    // tasks that stay in flight ([sim:never]) for the polls: a client polls a running task, whose view the edge
    // reads from Redis each time (a finished one may be answered from the edge's cache); cancelled afterwards
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await req('POST', '/v1/images/generations', JSON.stringify({ model: 'lumen-2-flex', prompt: `calibration ${i} [sim:never]` }));
      if (r.status === 200) ids.push((r.json as { data: Array<{ task_id: string }> }).data[0]!.task_id);
    }
    if (!ids.length) throw new Error('calibration: no submit accepted');
    // the background while nothing is asked of the edges
    const idle0 = await sampler.snapshot();
    await new Promise((r) => setTimeout(r, ms / 2));
    const idle1 = await sampler.snapshot();
    const idleS = (idle1.at - idle0.at) / 1000;
    const idleEdge = (edgeCpu(idle1) - edgeCpu(idle0)) / idleS;
    const idleCmds = redisCommandsBetween(idle0, idle1) / idleS;
    let n = 0;
    const p0 = await sampler.snapshot();
    const polls = await burst(ms, 5000, 8, async () => (await req('GET', `/v1/tasks/${ids[n++ % ids.length]}`)).status === 200);
    const p1 = await sampler.snapshot();
    const pS = (p1.at - p0.at) / 1000;
    const s0 = await sampler.snapshot();
    // at most 300 tasks: they are real, and the pools must finish them before the day's checks
    const submits = await burst(
      ms,
      300,
      8,
      async () => (await req('POST', '/v1/images/generations', JSON.stringify({ model: 'lumen-2-flex', prompt: 'calibration submit' }))).status === 200,
    );
    const s1 = await sampler.snapshot();
    const sS = (s1.at - s0.at) / 1000;
    // messages calls (the synchronous path: hold, the upstream call through the edge, capture); at most 200
    let m = 0;
    const messages = await burst(
      ms,
      200,
      8,
      async () =>
        (
          await req(
            'POST',
            '/v1/messages',
            JSON.stringify({ model: 'lumen-chat-1-mini', max_tokens: 64, messages: [{ role: 'user', content: `calibration ${m++}` }] }),
          )
        ).status === 200,
    );
    const m1 = await sampler.snapshot();
    const mS = (m1.at - s1.at) / 1000;
    for (const id of ids) await req('POST', `/v1/tasks/${id}/cancel`);
    const cal: Calibration = {
      edgeMsPerPoll: (1000 * (edgeCpu(p1) - edgeCpu(p0) - idleEdge * pS)) / Math.max(1, polls),
      redisCmdsPerPoll: Math.max(0, redisCommandsBetween(p0, p1) - idleCmds * pS) / Math.max(1, polls),
      edgeMsPerSubmit: (1000 * (edgeCpu(s1) - edgeCpu(s0) - idleEdge * sS)) / Math.max(1, submits),
      edgeMsPerMessage: (1000 * (edgeCpu(m1) - edgeCpu(s1) - idleEdge * mS)) / Math.max(1, messages),
      edgeIdleCores: idleEdge,
      messagesAnswered: messages,
      fixed,
    };
    process.stdout.write(
      `fleet | fixed cost (${fixed.seconds.toFixed(0)} s idle, per process): ${Object.entries(fixed.coresPerProcess)
        .filter(([g]) => g !== 'fleet-driver' && g !== 'upstream-sim')
        .map(([g, v]) => `${g} ${(1000 * v).toFixed(1)} mcores`)
        .join(', ')}; ${fixed.redisCmdsPerSPerProcess.toFixed(1)} Redis commands/s per service process, ${fixed.pgTxPerS.toFixed(1)} Postgres tx/s\n`,
    );
    process.stdout.write(
      `fleet | calibration: edge idle ${idleEdge.toFixed(3)} cores; ${polls} polls ${cal.edgeMsPerPoll.toFixed(3)} ms each, ` +
        `${cal.redisCmdsPerPoll.toFixed(2)} Redis commands each; ${submits} image submits ${cal.edgeMsPerSubmit.toFixed(3)} ms; ${messages} messages calls ${cal.edgeMsPerMessage.toFixed(3)} ms\n`,
    );
    return cal;
  } finally {
    await Promise.all(pools.map((p) => p.close()));
  }
}

const cpuOfGroup = (a: Snapshot, b: Snapshot, g: string): number =>
  Object.keys(b.cpu)
    .filter((k) => groupOf(k) === g)
    .reduce((s, k) => s + Math.max(0, (b.cpu[k] ?? 0) - (a.cpu[k] ?? 0)), 0);

/** The counts the costs were divided by, and the totals divided: what `FLEET_COSTS_OUT` records beside the costs. */
export interface Derivation {
  seconds: number;
  tasks: number;
  polls: number;
  messages: number;
  edgeCpuS: number;
  /** The edge's CPU per operation is the calibration's times this (the day's level over the calibration's). */
  edgeLevel: number;
  steps: Record<Pool, number>;
  settlements: number;
  billingCpuS: number;
  /** Billing to the end of the drain (how the costs were divided before: for comparison only). */
  billingCpuSToEnd: number;
  settlementsToEnd: number;
  bouncerXacts: number;
  pgXacts: number;
  bouncerCpuS: number;
  redisCmds: number;
}

/**
 * `a`…`b`: the load phase; `end`: after the drain (only the database's growth is read there: the rows of the tasks
 * accepted in the load phase are all written by then); `activeServers`: PgBouncer's sv_active averaged over the
 * snapshots (Little's law gives the mean transaction time); `answered`: what the edges answered in the load phase.
 *
 * Every cost is a total of the load phase over a count of the same phase, so that the costs predict the run they
 * came from (the check measures the same window); a count that lags its cause (settlements, steps) lags it by the
 * seconds a task takes, against a phase of minutes.
 */
export function measureCosts(
  a: Snapshot,
  b: Snapshot,
  end: Snapshot,
  driver: Driver,
  cal: Calibration | undefined,
  cfg: FleetConfig,
  machine: string,
  activeServers: number,
  answered: { tasks: number; polls: number; messages: number },
  upstream?: Record<Pool, Upstream>,
): MeasuredCosts & { derivation: Derivation } {
  const seconds = (b.at - a.at) / 1000;
  const processes = processCounts(b);
  const fixed = cal?.fixed;
  // a group's CPU in the phase above its processes' fixed cost (never below 0)
  const above = (g: string): number => Math.max(0, cpuOfGroup(a, b, g) - (fixed?.coresPerProcess[g] ?? 0) * (processes[g] ?? 0) * seconds);
  const serviceProcesses = SERVICE_GROUPS.reduce((s, g) => s + (processes[g] ?? 0), 0);
  const byKind: Record<Pool, number> = { image: 0, video: 0, artgen: 0, avatar: 0 };
  for (const t of driver.tasks.values()) if (t.kind !== 'messages') byKind[t.kind]++;
  const tasks = Math.max(1, answered.tasks);
  const cores: Record<string, number> = {};
  for (const g of new Set(Object.keys(b.cpu).map(groupOf))) cores[g] = cpuOfGroup(a, b, g) / seconds;
  // pool shares of the tasks the edges answered (driver.tasks: the same tasks, by kind)
  const kinds = Math.max(
    1,
    MODEL_POOLS.reduce((s, p) => s + byKind[p], 0),
  );
  const workerMsPerStep = {} as Record<Pool, number>;
  const stepsPerTask = {} as Record<Pool, number>;
  const steps = {} as Record<Pool, number>;
  for (const p of MODEL_POOLS) {
    steps[p] = (b.steps[p] ?? 0) - (a.steps[p] ?? 0);
    workerMsPerStep[p] = (1000 * above(`worker-${p}`)) / Math.max(1, steps[p]);
    stepsPerTask[p] = steps[p] / Math.max(1, (tasks * byKind[p]) / kinds);
  }
  // the edge: the phase's CPU divided among submits, polls and messages calls in the calibration's ratios
  const edgeCpuS = cpuOfGroup(a, b, 'api-edge');
  const ratio = { submit: cal?.edgeMsPerSubmit ?? 1, poll: cal?.edgeMsPerPoll ?? 0, message: cal?.edgeMsPerMessage ?? 0 };
  for (const k of ['submit', 'poll', 'message'] as const) if (!(ratio[k] > 0)) ratio[k] = k === 'submit' ? 1 : 0;
  const edgeLevel = (1000 * above('api-edge')) / Math.max(1e-9, tasks * ratio.submit + answered.polls * ratio.poll + answered.messages * ratio.message);
  const redisCmds = redisCommandsBetween(a, b);
  const redisCmdsPerPoll = cal?.redisCmdsPerPoll ?? 0;
  const pgTx = b.pgXacts - a.pgXacts;
  const bouncerTx = b.bouncerXacts - a.bouncerXacts;
  const settlements = b.settlements - a.settlements;
  const billingCpuS = cpuOfGroup(a, b, 'billing');
  const bouncerCpuS = cpuOfGroup(a, b, 'pgbouncer');
  const allSteps = MODEL_POOLS.reduce((s, p) => s + steps[p], 0);
  const fixedCmds = (fixed?.redisCmdsPerSPerProcess ?? 0) * serviceProcesses * seconds;
  return {
    measuredAt: new Date().toISOString(),
    machine,
    edgeMsPerSubmit: edgeLevel * ratio.submit,
    edgeMsPerPoll: edgeLevel * ratio.poll,
    edgeMsPerMessage: edgeLevel * ratio.message,
    messagesPerTask: answered.messages / tasks,
    workerMsPerStep,
    stepsPerTask,
    billingMsPerSettlement: (1000 * above('billing')) / Math.max(1, settlements),
    settlementsPerTask: settlements / tasks,
    webhookShare: cfg.webhookShare,
    redisCmdsPerTask: Math.max(0, redisCmds - fixedCmds - answered.polls * redisCmdsPerPoll - allSteps * REDIS_CMDS_PER_STEP) / tasks,
    redisCmdsPerPoll,
    redisUsPerCmd: (1e6 * above('redis')) / Math.max(1, redisCmds),
    redisBytesPerTask: Math.max(0, b.redisMemory - a.redisMemory) / tasks,
    pgTxPerTask: Math.max(0, pgTx - (fixed?.pgTxPerS ?? 0) * seconds - allSteps * PG_TX_PER_STEP) / tasks,
    pgMsPerTask: (1000 * above('postgres')) / tasks,
    pgWalBytesPerTask: Math.max(0, b.pgWalBytes - a.pgWalBytes - (fixed?.walBytesPerS ?? 0) * seconds) / tasks,
    pgStorageBytesPerTask: Math.max(0, end.dbBytes - a.dbBytes) / tasks,
    // sv_active is PgBouncer's: its own transactions/s, not the server's count (which has the sampler's too)
    pgMsPerTx: (1000 * activeServers) / Math.max(1e-9, bouncerTx / seconds),
    bouncerMsPerTx: (1000 * above('pgbouncer')) / Math.max(1, bouncerTx),
    bouncerTxPerTask: bouncerTx / tasks,
    mix: byKind,
    pollsPerTask: answered.polls / tasks,
    ...(fixed ? { fixed } : {}),
    processes,
    ...(upstream ? { upstream } : {}),
    compression: cfg.pollScale,
    run: {
      seconds,
      completedPerS: tasks / seconds,
      cores,
      redisCmdsPerS: redisCmds / seconds,
      pgTxPerS: pgTx / seconds,
      walBytesPerS: (b.pgWalBytes - a.pgWalBytes) / seconds,
      toEnd: toEnd(a, end, tasks, byKind, kinds),
    },
    derivation: {
      seconds,
      tasks,
      polls: answered.polls,
      messages: answered.messages,
      edgeCpuS,
      edgeLevel,
      steps,
      settlements,
      billingCpuS,
      billingCpuSToEnd: cpuOfGroup(a, end, 'billing'),
      settlementsToEnd: end.settlements - a.settlements,
      bouncerXacts: bouncerTx,
      pgXacts: pgTx,
      bouncerCpuS,
      redisCmds,
    },
  };
}

/** The run measured from the start of the load phase `a` to the end of the drain `end`. */
function toEnd(a: Snapshot, end: Snapshot, tasks: number, byKind: Record<Pool, number>, kinds: number): NonNullable<MeasuredCosts['run']['toEnd']> {
  const seconds = Math.max(0.001, (end.at - a.at) / 1000);
  const cores: Record<string, number> = {};
  for (const g of new Set(Object.keys(end.cpu).map(groupOf))) cores[g] = cpuOfGroup(a, end, g) / seconds;
  const stepsPerTask = {} as Record<Pool, number>;
  for (const p of MODEL_POOLS) stepsPerTask[p] = ((end.steps[p] ?? 0) - (a.steps[p] ?? 0)) / Math.max(1, (tasks * byKind[p]) / kinds);
  return {
    seconds,
    tasksPerS: tasks / seconds,
    stepsPerTask,
    cores,
    redisCmdsPerS: redisCommandsBetween(a, end) / seconds,
    pgTxPerS: (end.pgXacts - a.pgXacts) / seconds,
    walBytesPerS: (end.pgWalBytes - a.pgWalBytes) / seconds,
  };
}

/**
 * Predicted (reference costs, this run's load) against measured, each within 25 %: over the load phase and its
 * drain (`run.toEnd`) when the run has it — the work of the phase's tasks, wherever the fleet did it.
 */
export function modelCheck(
  m: MeasuredCosts,
  reference: string | Costs = COSTS_FILE,
  over: 'phase' | 'drained' = 'drained',
): { text: string; within: number; of: number } {
  if (typeof reference === 'string' && !existsSync(reference))
    return {
      text: `capacity model: no reference costs at ${path.relative(REPO_ROOT, reference)} (FLEET_COSTS_OUT=${path.relative(REPO_ROOT, reference)} records this run's)`,
      within: 0,
      of: 0,
    };
  const ref = typeof reference === 'string' ? (JSON.parse(readFileSync(reference, 'utf8')) as Costs) : reference;
  const drained = over === 'drained' ? m.run.toEnd : undefined;
  const x = drained ?? { ...m.run, tasksPerS: m.run.completedPerS, stepsPerTask: m.stepsPerTask };
  const rate = x.tasksPerS;
  // this run's load (rate, mix, client polls, messages calls), its upstream (steps per task) and its processes (each
  // pays its fixed cost): the reference's costs per operation and per process do the rest
  const shape = { stepsPerTask: x.stepsPerTask, ...(m.processes ? { processes: m.processes } : {}) };
  const predicted = coresAt(ref, rate, m.mix, m.pollsPerTask, m.messagesPerTask ?? 0, shape);
  const rows: Array<[string, number, number]> = [];
  for (const [k, v] of Object.entries(predicted)) rows.push([`${k} CPU (cores)`, v, x.cores[k] ?? 0]);
  rows.push(['Redis commands/s', redisCmdsAt(ref, rate, m.mix, m.pollsPerTask, shape), x.redisCmdsPerS]);
  rows.push(['Postgres transactions/s', pgTxAt(ref, rate, m.mix, shape), x.pgTxPerS]);
  rows.push(['Postgres WAL bytes/s', rate * ref.pgWalBytesPerTask + (m.processes ? (ref.fixed?.walBytesPerS ?? 0) : 0), x.walBytesPerS]);
  let within = 0;
  const lines = rows.map(([what, p, x]) => {
    // nothing predicted and nothing measured (a pool the mix leaves out) is exact
    const err = x > 0 ? (p - x) / x : p === 0 && x === 0 ? 0 : NaN;
    const ok = Math.abs(err) <= 0.25;
    if (ok) within++;
    return `| ${what} | ${p.toFixed(3)} | ${x.toFixed(3)} | ${Number.isFinite(err) ? `${(100 * err).toFixed(1)} %` : '–'} | ${ok ? 'yes' : 'NO'} |`;
  });
  return {
    text: [
      `capacity model (${ref === m ? "this run's own costs" : `reference costs of ${ref.measuredAt}`}) against this run's load of ${m.run.completedPerS.toFixed(1)} tasks/s` +
        (drained ? ` (${rate.toFixed(1)} tasks/s over the phase and its drain, ${x.seconds.toFixed(0)} s)` : '') +
        `: ${within} of ${rows.length} within 25 %`,
      '',
      '| quantity | predicted | measured | error | within 25 % |',
      '|---|---|---|---|---|',
      ...lines,
    ].join('\n'),
    within,
    of: rows.length,
  };
}

/**
 * The run's upstream per pool in real seconds: each pool's mean time open (created → completed, this run's tasks that
 * completed) ÷ the run's compression, and the effective cadence that gives the steps per task measured
 * (steps = 1 + time open ÷ cadence + ½: capacity-model.ts stepsFor).
 */
export async function measureUpstream(directUrl: string, compression: number, stepsPerTask: Record<Pool, number>): Promise<Record<Pool, Upstream>> {
  const c = new Client({ connectionString: directUrl });
  await c.connect();
  try {
    const r = await c.query<{ pool: string; s: number }>(
      `SELECT pool, avg(extract(epoch FROM completed_at - created_at))::float8 AS s FROM tasks
        WHERE status = 'completed' AND pool = ANY($1) GROUP BY pool`,
      [MODEL_POOLS],
    );
    const out = {} as Record<Pool, Upstream>;
    for (const p of MODEL_POOLS) {
      const durationS = (r.rows.find((x) => x.pool === p)?.s ?? 0) / compression;
      out[p] = { durationS, cadenceS: durationS / Math.max(0.5, stepsPerTask[p] - 1.5) };
    }
    return out;
  } finally {
    await c.end();
  }
}

/** Ordinary least squares y = a + b·x over the windows; `undefined` when x does not vary. */
function line(xs: number[], ys: number[]): { a: number; b: number } | undefined {
  const n = xs.length;
  const mx = xs.reduce((s, v) => s + v, 0) / n;
  const my = ys.reduce((s, v) => s + v, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (let i = 0; i < n; i++) {
    sxx += (xs[i]! - mx) ** 2;
    sxy += (xs[i]! - mx) * (ys[i]! - my);
  }
  if (!(sxx > 0)) return undefined;
  const b = sxy / sxx;
  return { a: my - b * mx, b };
}

/**
 * y = a + b·x + c·z with a ≥ `floor` (the idle cost), b ≥ 0, c ≥ 0, by the first of these that satisfies them
 * (tasks and steps move together, so the free plane often puts a negative weight on one): the free plane; the plane
 * with a = `floor`; a line on z alone (b = 0); a line on x alone (c = 0). `undefined` when none does.
 */
export function constrainedPlane(xs: number[], zs: number[], ys: number[], floor: number): { a: number; b: number; c: number; how: string } | undefined {
  const ok = (f: { a: number; b: number; c: number } | undefined): boolean => !!f && f.a >= floor - 1e-9 && f.b >= 0 && f.c >= 0;
  const free = plane(xs, zs, ys);
  if (free && ok(free)) return { ...free, how: 'plane' };
  // a = floor: least squares through the origin on (x, z) for y − floor
  const yf = ys.map((v) => v - floor);
  const sxx = xs.reduce((t, v) => t + v * v, 0);
  const szz = zs.reduce((t, v) => t + v * v, 0);
  const sxz = xs.reduce((t, v, i) => t + v * zs[i]!, 0);
  const sxy = xs.reduce((t, v, i) => t + v * yf[i]!, 0);
  const szy = zs.reduce((t, v, i) => t + v * yf[i]!, 0);
  const det = sxx * szz - sxz * sxz;
  if (Math.abs(det) > 1e-12) {
    const pinned = { a: floor, b: (sxy * szz - szy * sxz) / det, c: (szy * sxx - sxy * sxz) / det };
    if (ok(pinned)) return { ...pinned, how: 'plane at the idle cost' };
  }
  const onZ = line(zs, ys);
  if (onZ && ok({ a: onZ.a, b: 0, c: onZ.b })) return { a: onZ.a, b: 0, c: onZ.b, how: 'steps alone' };
  const onX = line(xs, ys);
  if (onX && ok({ a: onX.a, b: onX.b, c: 0 })) return { a: onX.a, b: onX.b, c: 0, how: 'tasks alone' };
  return undefined;
}

/** Least squares y = a + b·x + c·z over the windows (the normal equations, 3 × 3); `undefined` when singular. */
function plane(xs: number[], zs: number[], ys: number[]): { a: number; b: number; c: number } | undefined {
  const n = xs.length;
  const S = (f: (i: number) => number): number => Array.from({ length: n }, (_, i) => f(i)).reduce((s, v) => s + v, 0);
  const m = [
    [n, S((i) => xs[i]!), S((i) => zs[i]!), S((i) => ys[i]!)],
    [S((i) => xs[i]!), S((i) => xs[i]! ** 2), S((i) => xs[i]! * zs[i]!), S((i) => xs[i]! * ys[i]!)],
    [S((i) => zs[i]!), S((i) => xs[i]! * zs[i]!), S((i) => zs[i]! ** 2), S((i) => zs[i]! * ys[i]!)],
  ];
  for (let c = 0; c < 3; c++) {
    const p = m[c]![c]!;
    if (!(Math.abs(p) > 1e-12)) return undefined;
    for (let r = 0; r < 3; r++) {
      if (r === c) continue;
      const k = m[r]![c]! / p;
      for (let j = c; j < 4; j++) m[r]![j]! -= k * m[c]![j]!;
    }
  }
  return { a: m[0]![3]! / m[0]![0]!, b: m[1]![3]! / m[1]![1]!, c: m[2]![3]! / m[2]![2]! };
}

/**
 * The fixed cost while serving, and the cost per operation above it, from the day's windows (a cosine from 0.5× to
 * 1.5× the mean rate, so the windows see different rates): per resource, a straight line through (its driver/s,
 * its use/s) — the intercept is what the processes cost whatever the load (claim loops that spin while polls are
 * due, BullMQ's blocking reads, scrapes: more than the idle window shows), the slope the cost of one operation.
 * An intercept below the idle window's fixed cost (or a slope below 0) is noise: that resource keeps the whole-phase
 * cost. Replaces the whole-phase costs in `m` for the resources it fits; needs 4 windows at least.
 */
export function fitWindows<T extends MeasuredCosts>(
  m: T,
  snaps: Snapshot[],
  answered: Array<{ accepted: number; polls: number; messages: number }>,
  cal: Calibration | undefined,
): T & { fitted: string[] } {
  const fitted: string[] = [];
  if (snaps.length < 5 || !cal || !m.processes) return { ...m, fitted };
  const n = m.processes;
  const fixed: FixedCosts = { ...cal.fixed, coresPerProcess: { ...cal.fixed.coresPerProcess } };
  const out: T = { ...m, workerMsPerStep: { ...m.workerMsPerStep } };
  const ws = answered.map((w, i) => {
    const a = snaps[i]!;
    const b = snaps[i + 1]!;
    const s = (b.at - a.at) / 1000;
    const steps = MODEL_POOLS.reduce((t, p) => t + ((b.steps[p] ?? 0) - (a.steps[p] ?? 0)), 0);
    // a task's work in Redis and Postgres is half at its submit (the hold, the job) and half at its end (the
    // settlement): in a window the load outruns, the ends lag the submits, so the driver is the mean of both
    const ended = b.completed + b.failed - a.completed - a.failed;
    return { a, b, s, submits: w.accepted / s, tasks: (w.accepted + ended) / 2 / s, polls: w.polls / s, messages: w.messages / s, steps: steps / s };
  });
  /** Fits `y` on `x` per window; keeps it when the intercept is at least the idle fixed cost and the slope positive. */
  const fit = (
    name: string,
    x: (w: (typeof ws)[number]) => number,
    y: (w: (typeof ws)[number]) => number,
    idle: number,
  ): { a: number; b: number } | undefined => {
    const l = line(ws.map(x), ws.map(y));
    if (!l || !(l.b > 0) || !(l.a >= idle)) return undefined;
    fitted.push(name);
    return l;
  };
  const cpu = (w: (typeof ws)[number], g: string): number => cpuOfGroup(w.a, w.b, g) / w.s;
  const ratio = { submit: cal.edgeMsPerSubmit, poll: Math.max(0, cal.edgeMsPerPoll), message: Math.max(0, cal.edgeMsPerMessage) };
  const edge = fit(
    'api-edge',
    (w) => w.submits * ratio.submit + w.polls * ratio.poll + w.messages * ratio.message,
    (w) => 1000 * cpu(w, 'api-edge'),
    1000 * (cal.fixed.coresPerProcess['api-edge'] ?? 0) * (n['api-edge'] ?? 0),
  );
  if (edge) {
    fixed.coresPerProcess['api-edge'] = edge.a / 1000 / (n['api-edge'] ?? 1);
    out.edgeMsPerSubmit = edge.b * ratio.submit;
    out.edgeMsPerPoll = edge.b * ratio.poll;
    out.edgeMsPerMessage = edge.b * ratio.message;
  }
  for (const p of MODEL_POOLS) {
    const g = `worker-${p}`;
    const l = fit(
      g,
      (w) => ((w.b.steps[p] ?? 0) - (w.a.steps[p] ?? 0)) / w.s,
      (w) => 1000 * cpu(w, g),
      1000 * (cal.fixed.coresPerProcess[g] ?? 0) * (n[g] ?? 0),
    );
    if (l) {
      fixed.coresPerProcess[g] = l.a / 1000 / (n[g] ?? 1);
      out.workerMsPerStep[p] = l.b;
    }
  }
  const billing = fit(
    'billing',
    (w) => (w.b.settlements - w.a.settlements) / w.s,
    (w) => 1000 * cpu(w, 'billing'),
    1000 * (cal.fixed.coresPerProcess.billing ?? 0) * (n.billing ?? 0),
  );
  if (billing) {
    fixed.coresPerProcess.billing = billing.a / 1000 / (n.billing ?? 1);
    out.billingMsPerSettlement = billing.b;
  }
  const services = SERVICE_GROUPS.reduce((t, g) => t + (n[g] ?? 0), 0);
  // Redis commands and Postgres transactions: a plane through (tasks/s, worker steps/s) — a window the workers fell
  // behind in has the tasks without their steps, and the steps (claims, BullMQ jobs) carry most of the commands
  const byTasksAndSteps = (name: string, y: (w: (typeof ws)[number]) => number, idle: number): { a: number; b: number; c: number } | undefined => {
    const l = constrainedPlane(
      ws.map((w) => w.tasks),
      ws.map((w) => w.steps),
      ws.map(y),
      idle,
    );
    if (l) fitted.push(`${name} (${l.how})`);
    return l;
  };
  const cmds = byTasksAndSteps(
    'Redis commands',
    (w) => redisCommandsBetween(w.a, w.b) / w.s - w.polls * m.redisCmdsPerPoll,
    cal.fixed.redisCmdsPerSPerProcess * services,
  );
  if (cmds) {
    fixed.redisCmdsPerSPerProcess = cmds.a / services;
    out.redisCmdsPerTask = cmds.b;
    out.redisCmdsPerStep = cmds.c;
  }
  const redisCpu = fit(
    'redis CPU',
    (w) => redisCommandsBetween(w.a, w.b) / w.s,
    (w) => 1e6 * cpu(w, 'redis'),
    1e6 * (cal.fixed.coresPerProcess.redis ?? 0) * (n.redis ?? 0),
  );
  if (redisCpu) {
    fixed.coresPerProcess.redis = redisCpu.a / 1e6 / (n.redis ?? 1);
    out.redisUsPerCmd = redisCpu.b;
  }
  const pgTx = byTasksAndSteps('Postgres transactions', (w) => (w.b.pgXacts - w.a.pgXacts) / w.s, cal.fixed.pgTxPerS);
  if (pgTx) {
    fixed.pgTxPerS = pgTx.a;
    out.pgTxPerTask = pgTx.b;
    out.pgTxPerStep = pgTx.c;
  }
  const pgCpu = fit(
    'postgres CPU',
    (w) => w.tasks,
    (w) => 1000 * cpu(w, 'postgres'),
    1000 * (cal.fixed.coresPerProcess.postgres ?? 0),
  );
  if (pgCpu) {
    fixed.coresPerProcess.postgres = pgCpu.a / 1000;
    out.pgMsPerTask = pgCpu.b;
  }
  const wal = fit(
    'WAL',
    (w) => w.tasks,
    (w) => (w.b.pgWalBytes - w.a.pgWalBytes) / w.s,
    cal.fixed.walBytesPerS,
  );
  if (wal) {
    fixed.walBytesPerS = wal.a;
    out.pgWalBytesPerTask = wal.b;
  }
  const bouncer = fit(
    'pgbouncer CPU',
    (w) => (w.b.bouncerXacts - w.a.bouncerXacts) / w.s,
    (w) => 1000 * cpu(w, 'pgbouncer'),
    1000 * (cal.fixed.coresPerProcess.pgbouncer ?? 0),
  );
  if (bouncer) {
    fixed.coresPerProcess.pgbouncer = bouncer.a / 1000;
    out.bouncerMsPerTx = bouncer.b;
  }
  return { ...out, fixed, fitted };
}
