/**
 * Per-operation costs from a fleet run, and the capacity model's check against it.
 *
 * - Calibration (before the day, FLEET_CALIBRATE_S each): the edges alone under a fixed concurrency of polls, then
 *   of image submits, after an idle window that measures the background (workers' and billing's idle Redis
 *   commands, the edges' timers): the edge's CPU per poll and per submit, Redis commands per poll.
 * - The day: every other cost is the run's total of a resource over the count of what drove it (worker CPU per
 *   step, billing CPU per settlement, Redis commands and bytes per task, Postgres transactions, CPU, WAL and
 *   database bytes per task).
 * - The check: the reference costs (scripts/fleet/costs.json, from an earlier run) predict, for this run's own load
 *   (its completed tasks/s, mix and client polls per task), each part's CPU and the Redis and Postgres rates; each
 *   prediction is compared with what this run measured (target: within 25 %).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Pool as HttpPool } from 'undici';
import { REPO_ROOT } from '@gmg/testing';
import { MODEL_POOLS, coresAt, type Costs, type Pool } from './capacity-model';
import type { FleetConfig } from './config';
import type { Account, Driver } from './driver';
import { groupOf } from './report';
import { redisCommandsBetween, type Sampler, type Snapshot } from './sampler';

export const COSTS_FILE = path.join(REPO_ROOT, 'scripts/fleet/costs.json');

export interface Calibration {
  edgeMsPerSubmit: number;
  edgeMsPerPoll: number;
  redisCmdsPerPoll: number;
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
  };
}

const edgeCpu = (s: Snapshot): number => Object.entries(s.cpu).filter(([k]) => groupOf(k) === 'api-edge').reduce((a, [, v]) => a + v, 0);

/** `concurrency` loops of `fn` for `ms` and at most `max` calls; returns how many answered 200. */
async function burst(ms: number, max: number, concurrency: number, fn: () => Promise<boolean>): Promise<number> {
  const end = Date.now() + ms;
  let ok = 0;
  let started = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (started < max && Date.now() < end) {
      started++;
      if (await fn().catch(() => false)) ok++;
    }
  }));
  return ok;
}

export async function calibrateAndCost(cfg: FleetConfig, edges: string[], accounts: Account[], sampler: Sampler): Promise<Calibration> {
  const pools = edges.map((u) => new HttpPool(u, { connections: 8 }));
  const key = accounts[1]?.key ?? accounts[0]!.key;
  let rr = 0;
  const req = async (method: 'GET' | 'POST', p: string, body?: string): Promise<{ status: number; json: any }> => {
    const r = await pools[rr++ % pools.length]!.request({ method, path: p, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
    const text = await r.body.text();
    return { status: r.statusCode, json: text ? JSON.parse(text) : undefined };
  };
  const ms = cfg.calibrateS * 1000;
  try {
    // tasks that stay in flight ([sim:never]) for the polls: a client polls a running task, whose view the edge
    // reads from Redis each time (a finished one may be answered from the edge's cache); cancelled afterwards
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await req('POST', '/v1/images/generations', JSON.stringify({ model: 'lumen-2-flex', prompt: `calibration ${i} [sim:never]` }));
      if (r.status === 200) ids.push(r.json.data[0].task_id as string);
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
    const submits = await burst(ms, 300, 8, async () => (await req('POST', '/v1/images/generations', JSON.stringify({ model: 'lumen-2-flex', prompt: 'calibration submit' }))).status === 200);
    const s1 = await sampler.snapshot();
    const sS = (s1.at - s0.at) / 1000;
    for (const id of ids) await req('POST', `/v1/tasks/${id}/cancel`);
    return {
      edgeMsPerPoll: (1000 * (edgeCpu(p1) - edgeCpu(p0) - idleEdge * pS)) / Math.max(1, polls),
      redisCmdsPerPoll: Math.max(0, redisCommandsBetween(p0, p1) - idleCmds * pS) / Math.max(1, polls),
      edgeMsPerSubmit: (1000 * (edgeCpu(s1) - edgeCpu(s0) - idleEdge * sS)) / Math.max(1, submits),
    };
  } finally {
    await Promise.all(pools.map((p) => p.close()));
  }
}

const cpuOfGroup = (a: Snapshot, b: Snapshot, g: string): number =>
  Object.keys(b.cpu).filter((k) => groupOf(k) === g).reduce((s, k) => s + Math.max(0, (b.cpu[k] ?? 0) - (a.cpu[k] ?? 0)), 0);

/**
 * `a`…`b`: the load phase; `end`: after the drain (worker steps and settlements of the tasks accepted in the load
 * phase finish there); `activeServers`: PgBouncer's sv_active averaged over the snapshots (Little's law gives the
 * mean transaction time).
 */
export function measureCosts(a: Snapshot, b: Snapshot, end: Snapshot, driver: Driver, cal: Calibration | undefined, cfg: FleetConfig, machine: string, activeServers: number, answered: { tasks: number; polls: number }): MeasuredCosts {
  const seconds = (b.at - a.at) / 1000;
  // Two denominators. The edge, Redis and Postgres work of a window is that of the submissions the edges answered in
  // it (`answered`; a saturated fleet answers fewer than were sent). The pools' and billing's work for every task
  // accepted runs to `end`, after the drain: those divide by every task accepted.
  const byKind: Record<Pool, number> = { image: 0, video: 0, artgen: 0, avatar: 0 };
  for (const t of driver.tasks.values()) if (t.kind !== 'messages') byKind[t.kind]++;
  const tasks = Math.max(1, answered.tasks);
  const cores: Record<string, number> = {};
  for (const g of new Set(Object.keys(b.cpu).map(groupOf))) cores[g] = cpuOfGroup(a, b, g) / seconds;
  const workerMsPerStep = {} as Record<Pool, number>;
  const stepsPerTask = {} as Record<Pool, number>;
  for (const p of MODEL_POOLS) {
    const steps = (end.steps[p] ?? 0) - (a.steps[p] ?? 0);
    workerMsPerStep[p] = (1000 * cpuOfGroup(a, end, `worker-${p}`)) / Math.max(1, steps);
    stepsPerTask[p] = steps / Math.max(1, byKind[p]);
  }
  const redisCmds = redisCommandsBetween(a, b);
  const clientPolls = answered.polls;
  const redisCmdsPerPoll = cal?.redisCmdsPerPoll ?? 0;
  const pgTx = b.pgXacts - a.pgXacts;
  return {
    measuredAt: new Date().toISOString(),
    machine,
    edgeMsPerSubmit: cal?.edgeMsPerSubmit ?? NaN,
    edgeMsPerPoll: cal?.edgeMsPerPoll ?? NaN,
    workerMsPerStep,
    stepsPerTask,
    billingMsPerSettlement: (1000 * cpuOfGroup(a, end, 'billing')) / Math.max(1, end.settlements - a.settlements),
    webhookShare: cfg.webhookShare,
    redisCmdsPerTask: Math.max(0, redisCmds - clientPolls * redisCmdsPerPoll) / tasks,
    redisCmdsPerPoll,
    redisUsPerCmd: (1e6 * cpuOfGroup(a, b, 'redis')) / Math.max(1, redisCmds),
    redisBytesPerTask: Math.max(0, b.redisMemory - a.redisMemory) / tasks,
    pgTxPerTask: pgTx / tasks,
    pgMsPerTask: (1000 * cpuOfGroup(a, b, 'postgres')) / tasks,
    pgWalBytesPerTask: (b.pgWalBytes - a.pgWalBytes) / tasks,
    pgStorageBytesPerTask: Math.max(0, end.dbBytes - a.dbBytes) / tasks,
    pgMsPerTx: (1000 * activeServers) / Math.max(1, pgTx / seconds),
    bouncerMsPerTx: (1000 * cpuOfGroup(a, b, 'pgbouncer')) / Math.max(1, b.bouncerXacts - a.bouncerXacts),
    mix: byKind,
    pollsPerTask: clientPolls / tasks,
    run: {
      seconds,
      completedPerS: tasks / seconds,
      cores,
      redisCmdsPerS: redisCmds / seconds,
      pgTxPerS: pgTx / seconds,
      walBytesPerS: (b.pgWalBytes - a.pgWalBytes) / seconds,
    },
  };
}

/** Predicted (reference costs, this run's load) against measured, each within 25 %. */
export function modelCheck(m: MeasuredCosts, refFile = COSTS_FILE): { text: string; within: number; of: number } {
  if (!existsSync(refFile)) return { text: `capacity model: no reference costs at ${path.relative(REPO_ROOT, refFile)} (FLEET_COSTS_OUT=${path.relative(REPO_ROOT, refFile)} records this run's)`, within: 0, of: 0 };
  const ref = JSON.parse(readFileSync(refFile, 'utf8')) as Costs;
  const rate = m.run.completedPerS;
  const predicted = coresAt(ref, rate, m.mix, m.pollsPerTask);
  const rows: Array<[string, number, number]> = [];
  for (const [k, v] of Object.entries(predicted)) rows.push([`${k} CPU (cores)`, v, m.run.cores[k] ?? 0]);
  rows.push(['Redis commands/s', rate * (ref.redisCmdsPerTask + m.pollsPerTask * ref.redisCmdsPerPoll), m.run.redisCmdsPerS]);
  rows.push(['Postgres transactions/s', rate * ref.pgTxPerTask, m.run.pgTxPerS]);
  rows.push(['Postgres WAL bytes/s', rate * ref.pgWalBytesPerTask, m.run.walBytesPerS]);
  let within = 0;
  const lines = rows.map(([what, p, x]) => {
    const err = x > 0 ? (p - x) / x : NaN;
    const ok = Math.abs(err) <= 0.25;
    if (ok) within++;
    return `| ${what} | ${p.toFixed(3)} | ${x.toFixed(3)} | ${Number.isFinite(err) ? `${(100 * err).toFixed(1)} %` : '–'} | ${ok ? 'yes' : 'NO'} |`;
  });
  return {
    text: [`capacity model (reference costs of ${ref.measuredAt}) against this run's load of ${rate.toFixed(1)} tasks/s: ${within} of ${rows.length} within 25 %`, '',
      '| quantity | predicted | measured | error | within 25 % |', '|---|---|---|---|---|', ...lines].join('\n'),
    within,
    of: rows.length,
  };
}
