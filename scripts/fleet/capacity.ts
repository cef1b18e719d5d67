/**
 * `npm run capacity`: the capacity model (scripts/fleet/capacity-model.ts) over the measured per-operation costs
 * (scripts/fleet/costs.json, written by `FLEET_COSTS_OUT=scripts/fleet/costs.json npm run fleet`).
 *
 *   npm run capacity                                         # sizing for 10 M tasks/day, peak ×3
 *   npm run capacity -- --tasks-per-day 2e6 --peak 4 --polls-per-task 5 --mix image=50,video=30,artgen=15,avatar=5
 *   npm run capacity -- --write                              # regenerates docs/capacity.md
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { MODEL_POOLS, PG_PRIMARY_CORES, TARGET_UTILISATION, size, type Costs, type Load, type Pool, type Sizing } from './capacity-model';

const ROOT = path.resolve(__dirname, '../..');
const COSTS = path.join(ROOT, 'scripts/fleet/costs.json');
const DOC = path.join(ROOT, 'docs/capacity.md');

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

const f = (n: number, d = 1): string => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }) : '–');

function sizingTable(c: Costs, loads: Array<[string, Load]>): string {
  const sized: Array<[string, Sizing]> = loads.map(([n, l]) => [n, size(c, l)]);
  const row = (what: string, fn: (s: Sizing) => string): string => `| ${what} | ${sized.map(([, s]) => fn(s)).join(' | ')} |`;
  return [
    `| | ${sized.map(([n]) => n).join(' | ')} |`,
    `|---|${sized.map(() => '---').join('|')}|`,
    row('peak tasks/s', (s) => f(s.peakTasksPerS)),
    ...['api-edge', ...MODEL_POOLS.map((p) => `worker-${p}`), 'billing'].map((k) =>
      row(`${k} pods (cores at peak)`, (s) => `${s.pods[k]} (${f(s.cores[k]!, 2)})`),
    ),
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
      'client polls per task (tasks without a webhook poll every FLEET_POLL_MS); /v1/messages calls per task',
      `${f(c.pollsPerTask, 2)}; ${f(c.messagesPerTask ?? 0, 3)}`,
    ],
  ];
  return ['| cost | measured |', '|---|---|', ...rows.map(([a, b]) => `| ${a} | ${b} |`)].join('\n');
}

function main(): void {
  const c = JSON.parse(readFileSync(COSTS, 'utf8')) as Costs & { check?: string; selfCheck?: string };
  const load: Load = {
    tasksPerDay: Number(arg('tasks-per-day') ?? 10_000_000),
    peakFactor: Number(arg('peak') ?? 3),
    mix: arg('mix') ? parsePoolMix(arg('mix')!) : c.mix,
    pollsPerTask: Number(arg('polls-per-task') ?? c.pollsPerTask),
    messagesPerTask: Number(arg('messages-per-task') ?? c.messagesPerTask ?? 0),
  };
  const one = size(c, load);
  process.stdout.write(
    `${sizingTable(c, [[`${f(load.tasksPerDay / 1e6, 1)} M tasks/day, peak ×${load.peakFactor}`, load]])}\n\n` +
      `the whole gateway: ${f(one.tasksPerSPerCore, 1)} tasks/s per core (${f(1000 / one.tasksPerSPerCore, 1)} ms of CPU per task)\n`,
  );
  if (!process.argv.includes('--write')) return;
  const loads: Array<[string, Load]> = [1e6, 1e7, 1e8].map((n) => [`${n / 1e6} M/day, peak ×3`, { ...load, tasksPerDay: n, peakFactor: 3 }]);
  const doc = `# Capacity model

Generated by \`npm run capacity -- --write\` (scripts/fleet/capacity.ts) from scripts/fleet/costs.json, the
per-operation costs that \`FLEET_COSTS_OUT=scripts/fleet/costs.json npm run fleet\` measured
(${c.measuredAt.slice(0, 16).replace('T', ' ')} UTC, ${c.machine}). Do not edit by hand:
re-run the fleet, then this script.

## Measured costs

How each is measured (scripts/fleet/costs.ts): over the day's load phase itself, as the total of a resource in
the phase divided by the count of what drove it in the same phase — the window the check measures, so the costs
reproduce the run they came from. The edge's CPU is divided among the submits, client polls and /v1/messages calls
the edges answered in the ratios of a calibration before the day (each operation alone at a fixed concurrency,
minus an idle window's background: alone an operation costs less than in the day's sparse mixed traffic, so the
calibration gives the ratios, the day the level; the edges' idle background is in that level). Worker steps from
\`gmg_upstream_requests_total\`, settlement attempts from \`gmg_settlements_total\` (each service's /metrics), Redis
\`total_commands_processed\` and \`used_memory\` of the masters, Postgres \`pg_stat_database\` and \`pg_stat_wal\`,
PgBouncer \`SHOW POOLS\` / \`SHOW STATS\` (its own transaction count: the server's has the sampler's and
autovacuum's too), CPU from /proc (utime + stime; Postgres with its backends).

${costsTable(c)}

Mix of the run (tasks per pool): ${MODEL_POOLS.map((p) => `${p} ${c.mix[p]}`).join(', ')}.

## Sizing

Inputs: tasks per day, peak factor (peak ÷ mean rate), mix, client polls and /v1/messages calls per task. Pods are counted at
${TARGET_UTILISATION * 100} % of one core each, two at least per service; a Redis shard is one core (commands run on one thread),
three masters at least; PgBouncer's server connections follow Little's law (transactions/s × mean transaction time)
at ${TARGET_UTILISATION * 100} %. The first bottleneck is the part that does not scale out: one Postgres primary of
${PG_PRIMARY_CORES} cores, or the Redis shard that holds the busiest queue (raise QUEUE_SHARDS for that pool).

${sizingTable(c, loads)}

Per core: the whole gateway (edge, pools, billing, Redis, PgBouncer, Postgres; not the simulator or the load driver)
carries **${f(one.tasksPerSPerCore, 1)} tasks/s per core** at this mix and poll cadence.

Redis memory has **one model**: docs/operations.md, "Redis memory" (\`redisMaxmemoryFor\` in libs/queue, per-task bytes
measured by libs/tasks/src/redis-memory.int.test.ts). The rows above quote it for the steady state (tasks open 60 s,
K = 1 per pool); the backlogs that fill Redis in an incident — a slow upstream, a billing outage, webhook retries —
are sized there too, with the cap or TTL that bounds each.

Any other load: \`npm run capacity -- --tasks-per-day 2e6 --peak 4 --polls-per-task 5 --messages-per-task 0.1 --mix image=50,video=30,artgen=15,avatar=5\`.

## Checked against the fleet run

Every \`npm run fleet\` predicts, from these costs and its own load (accepted tasks/s, mix, client polls and messages
calls per task), each part's CPU and the Redis and Postgres rates, and prints them against what it measured (target:
each within 25 %). The run these costs came from, against its own costs (they must reproduce it):

${c.selfCheck ?? '(not recorded)'}

The same run against the costs recorded before it:

${c.check ?? '(not recorded)'}
`;
  writeFileSync(DOC, doc);
  process.stdout.write(`wrote ${path.relative(ROOT, DOC)}\n`);
}

main();
