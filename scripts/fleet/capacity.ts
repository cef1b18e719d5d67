/**
 * `npm run capacity`: the capacity model (scripts/fleet/capacity-model.ts) over the measured per-operation costs
 * (scripts/fleet/costs.json, written by `FLEET_COSTS_OUT=scripts/fleet/costs.json npm run fleet`).
 *
 *   npm run capacity                                         # sizing for 10 M tasks/day, peak ×3
 *   npm run capacity -- --tasks-per-day 2e6 --peak 4 --polls-per-task 5 --mix image=50,video=30,artgen=15,avatar=5
 *   npm run capacity -- --upstream image=20/3.5,video=90/5.5 --rtt 2 --shards image=2,billing=2
 *   npm run capacity -- --write                              # regenerates docs/capacity.md
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  DEPLOYMENT,
  MODEL_POOLS,
  PG_TX_PER_STEP,
  REDIS_CMDS_PER_STEP,
  RETENTION_TASKS_PER_S,
  SETTLEMENTS_PER_S_PER_BILLING_SHARD,
  TARGET_UTILISATION,
  size,
  type Costs,
  type FleetCheck,
  type Load,
  type Pool,
  type Sizing,
  type Upstream,
} from './capacity-model';
import { POLL_RTT_SECONDS, TARGET_POLL_UTILISATION } from './keda-targets';

const ROOT = path.resolve(__dirname, '../..');
const COSTS = path.join(ROOT, 'scripts/fleet/costs.json');
const DOC = path.join(ROOT, 'docs/capacity.md');
const OPS = path.join(ROOT, 'docs/operations.md');
/** The fleet runs' checks of the model (FLEET_CHECK_OUT=scripts/fleet/checks/<name>.json), shown in docs/capacity.md. */
const CHECKS = path.join(ROOT, 'scripts/fleet/checks');

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
}

function parsePoolMix(raw: string): Record<Pool, number> {
  const mix: Record<Pool, number> = { image: 0, video: 0, artgen: 0, avatar: 0 };
  for (const part of raw.split(',')) {
    const [k, v] = part.split('=');
    if (!MODEL_POOLS.includes(k as Pool) || !(Number(v) >= 0)) throw new Error(`--mix: bad entry "${part}" (pools: ${MODEL_POOLS.join(', ')})`);
    mix[k as Pool] = Number(v);
  }
  return mix;
}

/** `image=20/3.5,video=90/5.5`: per pool, seconds open / poll cadence in seconds. */
function parseUpstream(raw: string): Partial<Record<Pool, Upstream>> {
  const out: Partial<Record<Pool, Upstream>> = {};
  for (const part of raw.split(',')) {
    const m = /^(\w+)=([\d.]+)\/([\d.]+)$/.exec(part.trim());
    if (!m || !MODEL_POOLS.includes(m[1] as Pool) || !(Number(m[3]) > 0))
      throw new Error(`--upstream: bad entry "${part}" (pool=seconds open/cadence seconds)`);
    out[m[1] as Pool] = { durationS: Number(m[2]), cadenceS: Number(m[3]) };
  }
  return out;
}

function parseShards(raw: string): Load['shards'] {
  const out: NonNullable<Load['shards']> = {};
  for (const part of raw.split(',')) {
    const [k, v] = part.split('=');
    if (![...MODEL_POOLS, 'billing', 'webhook'].includes(k!) || !(Number(v) >= 1)) throw new Error(`--shards: bad entry "${part}"`);
    out[k as Pool] = Number(v);
  }
  return out;
}

const f = (n: number, d = 1): string => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }) : '–');

function sizingTable(c: Costs, loads: Array<[string, Load]>): string {
  const sized: Array<[string, Sizing]> = loads.map(([n, l]) => [n, size(c, l)]);
  const row = (what: string, fn: (s: Sizing) => string): string => `| ${what} | ${sized.map(([, s]) => fn(s)).join(' | ')} |`;
  return [
    `| | ${sized.map(([n]) => n).join(' | ')} |`,
    `|---|${sized.map(() => '---').join('|')}|`,
    row('peak tasks/s', (s) => f(s.peakTasksPerS)),
    row('steps per task (image, video, artgen, avatar)', (s) => MODEL_POOLS.map((p) => f(s.stepsPerTask[p])).join(', ')),
    row('tasks open at the peak (rate × time open)', (s) => f(s.openTasks, 0)),
    row('api-edge pods (cores at peak, fixed costs included)', (s) => `${s.pods['api-edge']} (${f(s.cores['api-edge']!, 2)})`),
    ...MODEL_POOLS.map((p) =>
      row(`worker-${p} pods (cores at peak; pods the slots need)`, (s) => `${s.pods[`worker-${p}`]} (${f(s.cores[`worker-${p}`]!, 2)}; ${s.slotPods[p]})`),
    ),
    row('billing pods (cores at peak)', (s) => `${s.pods.billing} (${f(s.cores.billing!, 2)})`),
    row('Redis commands/s at peak', (s) => f(s.redisCmdsPerS, 0)),
    row('Redis shards (masters; + 1 replica each)', (s) => String(s.redisShards)),
    row('Redis `maxmemory`, all masters together (GiB; docs/operations.md "Redis memory", steady state)', (s) => f(s.redisMaxmemoryGiB, 2)),
    row('… with an Idempotency-Key on every submit (GiB)', (s) => f(s.redisMaxmemoryKeyedGiB, 2)),
    row('Postgres transactions/s at peak', (s) => f(s.pgTxPerS, 0)),
    row('Postgres cores at peak', (s) => f(s.pgCores, 2)),
    row('PgBouncer → Postgres server connections', (s) => String(s.pgServerConnections)),
    row('storage per day (GiB, tables + indexes)', (s) => f(s.storageGiBPerDay, 2)),
    row('WAL per day (GiB)', (s) => f(s.walGiBPerDay, 2)),
    row('first bottleneck', (s) => s.firstBottleneck),
  ].join('\n');
}

/** Every limit with the peak rate at which it is full, and how full each load makes it. */
function limitsTable(c: Costs, loads: Array<[string, Load]>): string {
  const sized: Array<[string, Sizing]> = loads.map(([n, l]) => [n, size(c, l)]);
  const first = sized[0]![1];
  return [
    `| limit | full at (peak tasks/s) | ${sized.map(([n]) => `use at ${n}`).join(' | ')} |`,
    `|---|---|${sized.map(() => '---').join('|')}|`,
    ...first.limits.map((l) => {
      const use = sized.map(([, s]) => {
        const u = s.peakTasksPerS / (s.limits.find((x) => x.what === l.what)?.maxRate ?? NaN);
        return `${f(100 * u, 0)} %${u > 1 ? ' **EXCEEDED**' : ''}`;
      });
      return `| ${l.what} | ${f(l.maxRate, 0)} | ${use.join(' | ')} |`;
    }),
  ].join('\n');
}

function checksSection(): string {
  const files = existsSync(CHECKS) ? readdirSync(CHECKS).filter((x) => x.endsWith('.json')) : [];
  if (!files.length) return '(no recorded check: run the two commands above)';
  const checks = files.map((x) => JSON.parse(readFileSync(path.join(CHECKS, x), 'utf8')) as FleetCheck).sort((a, b) => a.rate - b.rate);
  return checks
    .map((k) =>
      [
        `### Mean ${k.rate} requests/s (${k.at.slice(0, 16).replace('T', ' ')} UTC, ${k.machine}, load average ${k.loadAverage.map((x) => x.toFixed(1)).join(' → ')})`,
        '',
        `\`${[...Object.entries(k.env).map(([a, b]) => `${a}=${b}`), 'node --import tsx scripts/fleet/main.ts'].join(' ')}\`: ${k.completedPerS.toFixed(1)} tasks/s accepted, the gateway's own processes ${k.gatewayCores.toFixed(2)} cores; end-of-run checks ${k.result}.`,
        '',
        k.upstream,
        '',
        k.text,
      ].join('\n'),
    )
    .join('\n\n');
}

function costsTable(c: Costs): string {
  const rows: Array<[string, string]> = [
    [
      'edge CPU per submit; per client poll (GET /v1/tasks/<id>); per /v1/messages call',
      `${f(c.edgeMsPerSubmit, 2)} ms; ${f(c.edgeMsPerPoll, 2)} ms; ${f(c.edgeMsPerMessage ?? 0, 2)} ms`,
    ],
    ...MODEL_POOLS.map((p): [string, string] => [
      `worker-${p} CPU per step (one upstream submit or poll); steps per task`,
      `${f(c.workerMsPerStep[p], 2)} ms; ${f(c.stepsPerTask[p], 1)}`,
    ]),
    [
      'billing CPU per settlement attempt (with webhooks for ' + `${(c.webhookShare * 100).toFixed(0)} % of tasks); attempts per task`,
      `${f(c.billingMsPerSettlement, 2)} ms; ${f(c.settlementsPerTask ?? 1, 2)}`,
    ],
    ['Redis commands per task (all but client polls); per client poll', `${f(c.redisCmdsPerTask, 1)}; ${f(c.redisCmdsPerPoll, 1)}`],
    ['Redis CPU per command', `${f(c.redisUsPerCmd, 1)} µs`],
    ['Redis memory per task (grown during the run, nothing expired yet)', `${f(c.redisBytesPerTask, 0)} bytes`],
    ['Postgres transactions per task; CPU per task', `${f(c.pgTxPerTask, 1)}; ${f(c.pgMsPerTask, 2)} ms`],
    ['Postgres WAL per task; database growth per task', `${f(c.pgWalBytesPerTask, 0)} bytes; ${f(c.pgStorageBytesPerTask, 0)} bytes`],
    ['mean transaction time (PgBouncer sv_active ÷ its transactions/s)', `${f(c.pgMsPerTx, 2)} ms`],
    ['PgBouncer CPU per pooled transaction; pooled transactions per task', `${f(c.bouncerMsPerTx, 3)} ms; ${f(c.bouncerTxPerTask ?? c.pgTxPerTask, 1)}`],
    [
      `Redis commands and Postgres transactions per worker step (${c.redisCmdsPerStep !== undefined ? 'fitted' : 'worker bench, quoted'})`,
      `${f(c.redisCmdsPerStep ?? REDIS_CMDS_PER_STEP, 2)}; ${f(c.pgTxPerStep ?? PG_TX_PER_STEP, 2)}`,
    ],
    [
      'client polls per task (tasks without a webhook poll every FLEET_POLL_MS); /v1/messages calls per task',
      `${f(c.pollsPerTask, 2)}; ${f(c.messagesPerTask ?? 0, 3)}`,
    ],
  ];
  return ['| cost | measured |', '|---|---|', ...rows.map(([a, b]) => `| ${a} | ${b} |`)].join('\n');
}

function fixedTable(c: Costs): string {
  if (!c.fixed) return '(these costs have no fixed-cost window: re-run the fleet)';
  const x = c.fixed;
  const groups = Object.keys(x.coresPerProcess).filter((g) => g !== 'fleet-driver' && g !== 'upstream-sim');
  return [
    '| process | replicas in the run | fixed CPU per process while serving (millicores) | RSS per process, idle (MiB) |',
    '|---|---|---|---|',
    ...groups.map((g) => `| ${g} | ${c.processes?.[g] ?? '–'} | ${f(1000 * x.coresPerProcess[g]!, 1)} | ${f(x.rssMiBPerProcess[g] ?? NaN, 0)} |`),
    '',
    `Fixed background while serving: ${f(x.redisCmdsPerSPerProcess, 1)} Redis commands/s per edge, worker or billing process; ${f(x.pgTxPerS, 1)} Postgres transactions/s and ${f(x.walBytesPerS / 1024, 1)} KiB/s of WAL for the whole fleet.`,
  ].join('\n');
}

function upstreamLine(c: Costs): string {
  if (!c.upstream) return '';
  return `Upstream of the run, in real time (measured time open ÷ the run's compression, ${f(1 / (c.compression ?? 1), 1)}×): ${MODEL_POOLS.map(
    (p) => `${p} ${f(c.upstream![p].durationS, 1)} s open, polled every ${f(c.upstream![p].cadenceS, 1)} s, ${f(c.stepsPerTask[p], 1)} steps`,
  ).join('; ')}.`;
}

function main(): void {
  const c = JSON.parse(readFileSync(COSTS, 'utf8')) as Costs & { check?: string; selfCheck?: string };
  const load: Load = {
    tasksPerDay: Number(arg('tasks-per-day') ?? 10_000_000),
    peakFactor: Number(arg('peak') ?? 3),
    mix: arg('mix') ? parsePoolMix(arg('mix')!) : c.mix,
    pollsPerTask: Number(arg('polls-per-task') ?? c.pollsPerTask),
    messagesPerTask: Number(arg('messages-per-task') ?? c.messagesPerTask ?? 0),
    ...(arg('upstream') ? { upstream: parseUpstream(arg('upstream')!) } : {}),
    ...(arg('rtt') ? { upstreamRttS: Number(arg('rtt')) } : {}),
    ...(arg('shards') ? { shards: parseShards(arg('shards')!) } : {}),
  };
  const one = size(c, load);
  process.stdout.write(
    `${sizingTable(c, [[`${f(load.tasksPerDay / 1e6, 1)} M tasks/day, peak ×${load.peakFactor}`, load]])}\n\n` +
      `${limitsTable(c, [['this load', load]])}\n\n` +
      `the whole gateway: ${f(one.tasksPerSPerCore, 1)} tasks/s per core at the peak (${f(1000 / one.tasksPerSPerCore, 1)} ms of CPU per task, fixed costs included)\n`,
  );
  if (!process.argv.includes('--write')) return;
  const loads: Array<[string, Load]> = [1e6, 1e7, 1e8].map((n) => [`${n / 1e6} M/day, peak ×3`, { ...load, tasksPerDay: n, peakFactor: 3 }]);
  const doc = `# Capacity model

Generated by \`node --import tsx scripts/fleet/capacity.ts --write\` (\`npm run capacity -- --write\`) from
scripts/fleet/costs.json, the costs that a separate fleet run recorded with \`FLEET_COSTS_OUT\`
(${c.measuredAt.slice(0, 16).replace('T', ' ')} UTC, ${c.machine}), and from the fleet runs' checks in
scripts/fleet/checks/. Do not edit by hand: re-run the fleet, then this script. It also writes the sizing summary
that docs/operations.md quotes (between its \`capacity:sizing\` markers): **this is the one sizing model**, in
scripts/fleet/capacity-model.ts, with Redis memory from \`redisMaxmemoryFor\` (libs/queue).

## What the model takes

- **A fixed cost per process**: each service's CPU, memory and Redis background with nothing asked of it (claim
  loops, BullMQ blocking and stall checks, sweeps, scrapes, GC), measured in an idle window before the calibration.
  A pod pays it whatever its load, so a pod carries ${TARGET_UTILISATION * 100} % of a core *less its fixed cost*
  of per-operation work, and a fleet of N replicas pays it N times.
- **Steps per task**: one upstream submit, then one poll per cadence until the task ends — time open ÷ cadence + ½
  (the renewal mean; \`--upstream image=20/3.5\` sets a pool's seconds open and cadence). Worker CPU, Redis commands
  (${REDIS_CMDS_PER_STEP} a step) and Postgres transactions (${PG_TX_PER_STEP} a step) follow the steps.
- **The upstream's latency**: the time a task stays open (open tasks = peak rate × time open: the due sets, the
  open views, Redis memory) and the round trip of one step (\`--rtt\`, default ${POLL_RTT_SECONDS.image} s, the KEDA
  targets' assumption in scripts/fleet/keda-targets.ts): a step holds one of \`WORKER_CONCURRENCY\`
  (${DEPLOYMENT.workerConcurrency}) slots for a round trip, so a pool needs steps/s × RTT ÷ (${DEPLOYMENT.workerConcurrency} × ${TARGET_POLL_UTILISATION}) pods
  whatever its CPU.
- **Per-operation costs** above the fixed cost, and the load: tasks per day, peak factor, mix, client polls and
  /v1/messages calls per task, queue shards (\`--shards image=2,billing=2\`).

The fleet runs the simulator at a realistic latency compressed ${f(1 / (c.compression ?? 1), 0)}×: \`SIM_TIME_SCALE\` 1 and
\`POLL_INTERVAL_SCALE\` 0.125 (the defaults of scripts/fleet/config.ts) stand for an upstream 8× slower than the
simulator's base (real images ~19 s, videos ~53 s, art and avatars ~16 s) polled at each model's real cadence, both
divided by 8. Compressing the task times and the poll cadence by the same factor keeps the **steps per task** of the
real upstream (they drive the CPU), while the day itself is compressed far more (a day in 2 minutes, 720×): the
tasks open at once are ÷ 8 of the real ones at the same rate, which is why the model takes the time open as an
input and uses the real one (below) for Redis and the slots. The simulator answers each request at once; the round
trip is the model's input, not measured here.

## Measured costs

How each is measured (scripts/fleet/costs.ts): per resource, **a line through the day's windows** (20 s each; the
day's cosine takes them from 0.5× to 1.5× the mean rate): its intercept is the fixed cost while serving, its slope
the cost of one operation — for Redis commands and Postgres transactions a plane through tasks/s and worker
steps/s, since a window the workers fell behind in has tasks without their steps. Where a line does not fit (an
intercept below the idle window's fixed cost, a negative slope), that resource keeps the whole-phase cost: its total
in the phase less the idle fixed cost, over the count of what drove it. The idle window (every process, nothing
asked, before the calibration) is printed by every run: 5–12 millicores and about 18 Redis commands/s a service
process on this machine; the fixed cost while serving (below) is the fit's. The edge's CPU is divided among the submits, client polls and /v1/messages calls
the edges answered in the ratios of a calibration before the day (each operation alone at a fixed concurrency).
Worker steps from \`gmg_upstream_requests_total\`, settlement attempts from \`gmg_settlements_total\`, Redis
\`total_commands_processed\` of the masters, Postgres \`pg_stat_database\` and \`pg_stat_wal\`, PgBouncer
\`SHOW STATS\`, CPU from /proc (utime + stime; Postgres with its backends).

**Fixed cost per process:**

${fixedTable(c)}

**Per operation:**

${costsTable(c)}

${upstreamLine(c)}

Mix of the run (tasks per pool): ${MODEL_POOLS.map((p) => `${p} ${c.mix[p]}`).join(', ')}.

## Sizing

Pods are counted at ${TARGET_UTILISATION * 100} % of one core less their fixed cost, two at least per service, and a
pool at least the pods its slots need; a Redis shard is one core (commands run on one thread), three masters at
least; PgBouncer's server connections follow Little's law at ${TARGET_UTILISATION * 100} %. Upstream as measured
(real time), round trip ${POLL_RTT_SECONDS.image} s, K = 1 per queue (k8s/base; the production overlay ships K = 2).

${sizingTable(c, loads)}

Per core at the 10 M/day peak: the whole gateway (edge, pools, billing, Redis, PgBouncer, Postgres; not the simulator
or the load driver) carries **${f(size(c, loads[1]![1]).tasksPerSPerCore, 1)} tasks/s per core**, fixed costs included.

## Every limit

The parts that do not scale by adding pods, and the shipped caps (scripts/fleet/capacity-model.ts \`DEPLOYMENT\`:
k8s/base maxReplicas and maxReplicaCount, PgBouncer's 2 replicas × \`max_db_connections\` 40), each with the peak
tasks/s at which it is full and how full each load makes it. Quoted, not measured by the fleet: a billing queue shard
settles ≥ ${SETTLEMENTS_PER_S_PER_BILLING_SHARD}/s (billing bench); one retention worker moves ${RETENTION_TASKS_PER_S} tasks/s (docs/operations.md,
"Growth"). A queue's Redis core counts every non-poll command of its pool's tasks on its shards (an upper bound).

${limitsTable(c, loads)}

## Redis memory

Redis memory has **one model**: \`redisMaxmemoryFor\` in libs/queue, with the per-task bytes that
libs/tasks/src/redis-memory.int.test.ts measures (docs/operations.md, "Redis memory"). The sizing rows above feed it
the open tasks of the measured upstream at the peak (not a fixed 60 s); the summary docs/operations.md quotes is
written from the same function by this script. The backlogs of an incident — a slow upstream (every task open until
its 30-minute deadline), a billing outage, webhook retries — come on top, each with its cap or TTL:
docs/operations.md, "Backlogs".

Any other load: \`node --import tsx scripts/fleet/capacity.ts --tasks-per-day 2e6 --peak 4 --polls-per-task 5 --messages-per-task 0.1 --mix image=50,video=30,artgen=15,avatar=5 --upstream image=20/3.5,video=90/5.5 --rtt 2 --shards image=2\`.

## Checked against the fleet run

Each fleet run predicts, from these costs (a separate run's, never its own) and its own load — accepted tasks/s,
mix, client polls and messages calls per task, its steps per task, its processes — each part's CPU and the Redis and
Postgres rates, and prints them against what it measured (target: each within 25 %; \`FLEET_MODEL_STRICT=1\` fails
the run otherwise). The two loads, one command each (about 3 minutes each on this machine; \`FLEET_CHECK_OUT\` records
the check shown here, then \`node --import tsx scripts/fleet/capacity.ts --write\`):

    FLEET_MODEL_STRICT=1 FLEET_CHECK_OUT=scripts/fleet/checks/rate-40.json node --import tsx scripts/fleet/main.ts
    FLEET_MODEL_STRICT=1 FLEET_RATE=20 FLEET_CHECK_OUT=scripts/fleet/checks/rate-20.json node --import tsx scripts/fleet/main.ts

and the costs themselves from a third run at another load:

    FLEET_RATE=30 FLEET_WINDOW_S=20 FLEET_COSTS_OUT=scripts/fleet/costs.json node --import tsx scripts/fleet/main.ts

(20 s windows: the costs are lines through them, docs/benchmarks.md "Fleet run".) The CPU rows are sensitive to
other work on the machine (the load average is in each heading); the Redis and Postgres rates much less. The checks
below are the runs' recorded windows (\`FLEET_SNAPS_OUT\`) checked against scripts/fleet/costs.json by this code
(docs/benchmarks.md says how each was made).

${checksSection()}
`;
  writeFileSync(DOC, doc);
  process.stdout.write(`wrote ${path.relative(ROOT, DOC)}\n`);
  const ops = readFileSync(OPS, 'utf8');
  const begin = '<!-- capacity:sizing (generated by scripts/fleet/capacity.ts --write; do not edit) -->';
  const endMark = '<!-- /capacity:sizing -->';
  const a = ops.indexOf(begin);
  const b = ops.indexOf(endMark);
  if (a < 0 || b < a) throw new Error(`docs/operations.md: the ${begin} … ${endMark} markers are missing`);
  writeFileSync(OPS, `${ops.slice(0, a + begin.length)}\n\n${operationsSummary(c, loads)}\n\n${ops.slice(b)}`);
  process.stdout.write(`wrote ${path.relative(ROOT, OPS)} (the sizing summary)\n`);
}

/** The summary docs/operations.md quotes: the same model, the same loads. */
function operationsSummary(c: Costs, loads: Array<[string, Load]>): string {
  const sized: Array<[string, Sizing]> = loads.map(([n, l]) => [n, size(c, l)]);
  const row = (what: string, fn: (s: Sizing) => string): string => `| ${what} | ${sized.map(([, s]) => fn(s)).join(' | ')} |`;
  return [
    `| | ${sized.map(([n]) => n).join(' | ')} |`,
    `|---|${sized.map(() => '---').join('|')}|`,
    row('peak tasks/s; tasks open at the peak', (s) => `${f(s.peakTasksPerS)}; ${f(s.openTasks, 0)}`),
    row('Redis `maxmemory`, steady state (GiB; every submit keyed)', (s) => `${f(s.redisMaxmemoryGiB, 2)} (${f(s.redisMaxmemoryKeyedGiB, 2)})`),
    row('Redis shards (masters); commands/s at peak', (s) => `${s.redisShards}; ${f(s.redisCmdsPerS, 0)}`),
    row('Postgres transactions/s; cores at peak', (s) => `${f(s.pgTxPerS, 0)}; ${f(s.pgCores, 2)}`),
    row('PgBouncer → Postgres server connections busy (of 80)', (s) => String(s.pgServerConnections)),
    row('first limit', (s) => s.firstBottleneck),
  ].join('\n');
}

main();
