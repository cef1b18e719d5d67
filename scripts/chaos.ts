/**
 * `npm run chaos`: the fault-injection suite. Starts its own Redis and Postgres on free ports (never the shared
 * 127.0.0.1:6379/:5432), the services as real processes, runs every scenario in turn, prints the table, and exits 1
 * when any scenario is not green. CHAOS_ONLY=flush,pg,... runs a subset; CHAOS_TABLE=<file> also writes the table.
 * CHAOS_PGBOUNCER=1 puts PgBouncer (transaction mode, k8s/base/pgbouncer/pgbouncer.ini) between the services and Postgres,
 * as production runs them, and adds the "PgBouncer restarted mid-flight" scenario. CHAOS_REDIS_CLUSTER=1 puts the
 * services on a Redis Cluster of its own (3 masters, a replica each) and adds "kill -9 the image queue's master" and "the image queue's slot migrated to another master".
 */
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import * as s from '../test/chaos/scenarios';
import { World, SWEEP_INTERVAL_MS } from '../test/chaos/world';

const SCENARIOS: Array<[string, (w: World) => Promise<s.Row>]> = [
  ['bad-input', s.badInput],
  ['flush', s.flushAll],
  ['redis-kill', s.redisKill],
  ['pg', s.postgresRestart],
  ['billing', s.billingKill],
  ['worker', s.workerKill],
  ['edge', s.edgeTerm],
  ['edge-streams', s.edgeKillStreams],
  ['upstream', (w) => s.upstreamOutage(w, false)],
  ['failover', (w) => s.upstreamOutage(w, true)],
  ['slow-upstream', (w) => s.slowUpstream(w)],
  ['poison', (w) => s.poisonAnswers(w)],
  ['pg-slow', (w) => s.postgresSlow(w)],
  ['billing-outage', (w) => s.billingOutage(w)],
  ['reshard', (w) => s.reshardUnderLoad(w)],
  ['redis-black-hole', (w) => s.redisBlackHole(w)],
  // only through the pooler (CHAOS_PGBOUNCER=1); without it the scenario is listed as not run
  ['pgbouncer', s.pgbouncerRestart],
  // only on the Redis Cluster (CHAOS_REDIS_CLUSTER=1)
  ['cluster-master', s.clusterMasterKill],
  ['cluster-slot-migration', s.clusterSlotMigration],
];
/** Scenarios that fault the standalone Redis itself: not run when the services use the cluster. */
const STANDALONE_REDIS_ONLY = new Set(['flush', 'redis-kill', 'redis-black-hole']);
/** Scenarios that fault the Redis Cluster: run only when the services use it. */
const CLUSTER_ONLY = new Set(['cluster-master', 'cluster-slot-migration']);
const SUITE_LIMIT_MS = 9 * 60_000;

const cell = (v: number | undefined): string => (v === undefined ? '–' : String(v));

function table(rows: s.Row[]): string {
  const head = '| scenario | tasks | terminal | settled once | invariant | time to heal | result | notes |\n| - | - | - | - | - | - | - | - |';
  return [
    head,
    ...rows.map(
      (r) =>
        `| ${r.scenario} | ${cell(r.tasks)} | ${cell(r.terminal)} | ${cell(r.settledOnce)} | ${r.invariant === undefined ? '–' : r.invariant ? 'holds' : `BROKEN${r.broken?.length ? ` (${r.broken.join('; ')})` : ''}`} | ${r.healMs === undefined ? '–' : `${(r.healMs / 1000).toFixed(2)} s`} | ${r.ok ? 'green' : 'RED'} | ${r.note} |`,
    ),
  ].join('\n');
}

async function main(): Promise<void> {
  const only = process.env.CHAOS_ONLY?.split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  const started = Date.now();
  const killer = setTimeout(() => {
    console.error(`chaos: over ${SUITE_LIMIT_MS / 60_000} min, aborting`);
    process.exit(2);
  }, SUITE_LIMIT_MS);
  killer.unref();
  const w = new World();
  const rows: s.Row[] = [];
  try {
    await w.start();
    console.log(
      `chaos: own Redis on :${w.redis.port}, own Postgres on :${w.pg.port}${w.pooler ? `, PgBouncer on :${w.pooler.port} (services through it)` : ''}${w.cluster ? `, Redis Cluster ${w.cluster.nodesEnv} (services on it)` : ''}; sweep interval ${SWEEP_INTERVAL_MS} ms`,
    );
    for (const [name, run] of SCENARIOS) {
      if (only && !only.includes(name)) continue;
      if (name === 'pgbouncer' && !w.pooler) {
        console.log('chaos: not run  pgbouncer (needs CHAOS_PGBOUNCER=1)');
        continue;
      }
      if (CLUSTER_ONLY.has(name) && !w.cluster) {
        console.log(`chaos: not run  ${name} (needs CHAOS_REDIS_CLUSTER=1)`);
        continue;
      }
      if (w.cluster && STANDALONE_REDIS_ONLY.has(name)) {
        console.log(`chaos: not run  ${name} (faults the standalone Redis; the services use the cluster)`);
        continue;
      }
      const t = Date.now();
      const row = await run(w).catch((e: unknown) => ({ scenario: name, ok: false, note: `threw: ${(e as Error).message.split('\n')[0]}` }));
      rows.push(row);
      console.log(`chaos: ${row.ok ? 'green' : 'RED  '} ${row.scenario} (${((Date.now() - t) / 1000).toFixed(1)} s) ${row.note}`);
      if (w.deadServices().length) {
        for (const d of w.deadServices()) console.error(`--- ${d} exited ---\n${w.procs[d as 'edge']?.output().slice(-3000) ?? ''}`);
        break;
      }
    }
  } finally {
    await w.stop();
  }
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
  const out = `${table(rows)}\n\n${new Date().toISOString()} · ${machine} · suite ${((Date.now() - started) / 1000).toFixed(0)} s`;
  console.log(`\n${out}`);
  if (process.env.CHAOS_TABLE) writeFileSync(process.env.CHAOS_TABLE, `${out}\n`);
  process.exitCode = rows.length > 0 && rows.every((r) => r.ok) ? 0 : 1;
}

main().catch((e: unknown) => {
  console.error('chaos failed:', e);
  process.exit(1);
});
