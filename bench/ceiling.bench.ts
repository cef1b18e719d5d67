/**
 * `npm run bench -- ceiling`: the gateway against its own ceiling, in the same run, with the same load generator
 * (autocannon, in this process). The ceiling is bench/minimal-server.ts: Express 5 + Joi + one pg INSERT + one
 * BullMQ add for a submit, one Redis HGETALL for a poll. Only the server being measured does work during a run
 * (api-edge alone: no worker, no billing), against the same Postgres and Redis. Prints, per path, requests per
 * second, p99, the ratio gateway / minimal and the server's CPU per request, measured from outside
 * (/proc/<pid>/stat utime + stime before and after the run); then the edge's peak RSS (/proc/<pid>/status VmHWM),
 * and its peak before the first request, each against issue 39's bound (≤ 200 MB peak, ≤ 150 MB after start-up).
 * Inserts a row into the ceiling table of docs/benchmarks.md. Loopback only; every run bounded in time.
 *
 *   npm run bench -- ceiling                                  # 100 connections, 1 × 5 s per path and server
 *   BENCH_CEILING_LONG=1 npm run bench -- ceiling             # the issue's form: 3 × 10 s, median
 *   BENCH_CEILING_ONLY=submit BENCH_CPU_PROF=/tmp/prof npm run bench -- ceiling
 *       # one path only, with V8 CPU profiles of the edge and of the minimal server written to that folder
 *       # (CPU.<date>.<time>.<pid>.<thread>.…: the run prints both pids; summarise one with
 *       # `node --import tsx bench/profile-summary.ts /tmp/prof/<file>.cpuprofile`)
 *   BENCH_CEILING_ACCOUNTS=100 npm run bench -- ceiling   # submits spread over 100 accounts (default 1)
 *   BENCH_NOTE='after: …' labels the row.
 *   BENCH_CEILING_EDGES=2 npm run bench -- ceiling                        # fleet: one account vs 100 over two edges
 *   BENCH_CEILING_SUSTAINED=1 BENCH_SUSTAINED_MINUTES=10 npm run bench -- ceiling  # fleet: one account for 10 min
 *       # (bench/ceiling-fleet.ts: both print their figures and check the ledger after the run)
 *   BENCH_BASELINE=/tmp/base npm run bench -- ceiling
 *       # A/B in one run: also measures the api-edge bundle of another checkout (e.g. `git worktree add /tmp/base
 *       # <commit> && (cd /tmp/base && npm run build)`: the build installs what is missing first), in the same
 *       # rounds, against the same database, and prints this edge / that edge per path (the median of each round's
 *       # ratio) and that edge's peak RSS (and after start-up). No row is written.
 *   BENCH_MINIMAL_PROTOTYPED=1 npm run bench -- ceiling
 *       # the stricter ceiling: the minimal server's requests and responses made with Express's prototypes from the
 *       # start, as the gateway's server makes them (services/api-edge/src/http/app-server.ts); the row says so
 */
import type { ChildProcess } from 'node:child_process';
import { insertRow } from './doc-table';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { AccountRepository, ApiKeyRepository, GroupRepository, loadPrices } from '@gmg/db';
import { REPO_ROOT, TEST_REDIS_URL, createTestDatabase, deleteRedisPrefix, freePort, uniqueRedisPrefix } from '@gmg/testing';
import { startNode, stop } from './bench-process';
import { FLEET_MODE, runFleet } from './ceiling-fleet';
import { cpuSeconds, memMiB } from './proc-stats';

/**
 * The key is in a group without fair-use limits (docs/rate-limits.md), as the issue measured: no per-request rate
 * counter, no in-flight count. BENCH_CEILING_FAIR_USE=1 gives it limits it never reaches instead, so both checks
 * run on every submit (the in-flight count grows with the open tasks: nothing finishes them in this bench).
 */
const FAIR_USE = process.env.BENCH_CEILING_FAIR_USE === '1';
const PROTOTYPED = process.env.BENCH_MINIMAL_PROTOTYPED === '1';
/** Submits spread over this many accounts (one key each, in turn): 1 is the worst case for the account row lock. */
const ACCOUNTS = Math.max(1, Math.min(Number(process.env.BENCH_CEILING_ACCOUNTS ?? 1), 1000));

const LONG = process.env.BENCH_CEILING_LONG === '1';
const ROUNDS = Math.max(1, Math.min(Number(process.env.BENCH_CEILING_ROUNDS ?? (LONG ? 3 : 1)), 20));
const SECONDS = Math.min(Number(process.env.BENCH_CEILING_SECONDS ?? (LONG ? 10 : 5)), 60);
const CONNECTIONS = Math.min(Number(process.env.BENCH_CEILING_CONNECTIONS ?? 100), 1000);
const ONLY = process.env.BENCH_CEILING_ONLY;
const PATHS = (['submit', 'poll'] as const).filter((p) => !ONLY || ONLY === p);
const WARMUP = 300;
/** Linux reports utime/stime in clock ticks of USER_HZ, 100 on every mainstream kernel build. */
const BODY = JSON.stringify({ model: 'lumen-2-flex', prompt: 'benchmark', resolution: '1MP' });

/** Issue 39's bounds on the edge's resident set, in MB (10^6 bytes; the bench measures MiB). */
const PEAK_TARGET_MB = 200;
const START_TARGET_MB = 150;
const againstTarget = (what: string, mib: number, targetMb: number): string => {
  const mb = (mib * 2 ** 20) / 1e6;
  return `${what} ${mb.toFixed(0)} MB ${mb <= targetMb ? '≤' : '>'} ${targetMb} MB (${mb <= targetMb ? 'met' : 'NOT met'})`;
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** Another checkout whose built edge (dist/services/api-edge) is measured in the same rounds: an A/B in one run. */
const BASELINE = process.env.BENCH_BASELINE ? path.resolve(process.env.BENCH_BASELINE) : undefined;

interface Target {
  name: 'minimal' | 'gateway' | 'baseline';
  base: string;
  pid: number;
  headers: Record<string, string>;
  ids: string[];
  /** Authorization headers to submit with in turn (several accounts); polls use `headers`, whose key owns `ids`. */
  auths?: string[];
}

interface Run {
  rps: number;
  p99: number;
  cpuUsPerReq: number;
  bad: number;
}

async function measure(t: Target, which: 'submit' | 'poll'): Promise<Run> {
  let n = 0;
  const auths = t.auths;
  const request =
    which === 'submit'
      ? {
          method: 'POST' as const,
          path: '/v1/images/generations',
          body: BODY,
          ...(auths ? { setupRequest: (req: autocannon.Request) => ({ ...req, headers: { ...req.headers, authorization: auths[n++ % auths.length] } }) } : {}),
        }
      : { method: 'GET' as const, setupRequest: (req: autocannon.Request) => ({ ...req, path: `/v1/tasks/${t.ids[n++ % t.ids.length]}` }) };
  const cpu0 = cpuSeconds(t.pid);
  const r = await autocannon({
    url: t.base,
    connections: CONNECTIONS,
    duration: SECONDS,
    timeout: 30,
    headers: { ...t.headers, 'content-type': 'application/json' },
    requests: [request],
  });
  const cpu = cpuSeconds(t.pid) - cpu0;
  const total = r.requests.total;
  return { rps: total / SECONDS, p99: r.latency.p99, cpuUsPerReq: (cpu * 1e6) / Math.max(total, 1), bad: r.non2xx + r.errors + r.timeouts };
}

async function warmUp(t: Target): Promise<void> {
  for (let i = 0; i < WARMUP; i++) {
    const r = await fetch(`${t.base}/v1/images/generations`, { method: 'POST', headers: { ...t.headers, 'content-type': 'application/json' }, body: BODY });
    const j = (await r.json()) as { data?: Array<{ task_id: string }> };
    if (r.status !== 200 || !j.data?.[0]) throw new Error(`${t.name} warm-up submit: ${r.status} ${JSON.stringify(j)}`);
    t.ids.push(j.data[0].task_id);
    const p = await fetch(`${t.base}/v1/tasks/${j.data[0].task_id}`, { headers: t.headers });
    await p.arrayBuffer();
    if (p.status !== 200) throw new Error(`${t.name} warm-up poll: ${p.status}`);
  }
}

async function main(): Promise<void> {
  if (FLEET_MODE) return runFleet();
  const db = await createTestDatabase('gmg_bench_ceil');
  const prefix = uniqueRedisPrefix();
  const redis = new Redis(TEST_REDIS_URL);
  let edge: ChildProcess | undefined;
  let minimal: ChildProcess | undefined;
  let baseline: ChildProcess | undefined;
  try {
    await loadPrices(db.dataSource, path.join(REPO_ROOT, 'infra/prices.json'));
    const [edgePort, minPort, basePort] = await Promise.all([freePort(), freePort(), freePort()]);
    const profDir = process.env.BENCH_CPU_PROF;
    // access logs go to stdout as in production (a pipe nobody reads would fill up: /dev/null instead)
    const edgeEnv = (queuePrefix: string) => ({
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: queuePrefix,
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
      ADMIN_TOKEN: 'bench-admin-token-0123456789abcdef',
    });
    if (BASELINE) baseline = await startNode('services/api-edge/src/main.ts', basePort, edgeEnv(`${prefix}:base`), [], BASELINE);
    edge = await startNode('services/api-edge/src/main.ts', edgePort, edgeEnv(`${prefix}:edge`), [
      ...(profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []),
      // e.g. BENCH_EDGE_NODE_ARGS="--heap-prof --heap-prof-dir=/tmp/heap" (allocation sampling, written when the edge stops)
      ...(process.env.BENCH_EDGE_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? []),
    ]);
    // the minimal server is profiled too: a diff of the two profiles shows where the gateway's extra time goes
    minimal = await startNode(
      'bench/minimal-server.ts',
      minPort,
      { DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: `${prefix}:min`, MINIMAL_PROTOTYPED: PROTOTYPED ? '1' : '0' },
      profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
    );
    const accounts = new AccountRepository(db.dataSource);
    await new GroupRepository(db.dataSource).upsert({ name: 'bench-unlimited', priceRatio: 1, models: null, rpsLimit: null, inflightLimit: null });
    const auths: string[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      const acc = await accounts.create({ name: `bench-ceiling-${i}` });
      await accounts.topup(acc.id, 10n ** 15n);
      const created = await new ApiKeyRepository(db.dataSource).create(
        FAIR_USE ? { accountId: acc.id, rpsLimit: 1_000_000, inflightLimit: 1_000_000 } : { accountId: acc.id, groupName: 'bench-unlimited' },
      );
      auths.push(`Bearer ${created.secret}`);
    }
    if (profDir) console.log(`CPU profiles in ${profDir}: edge pid ${edge.pid}, minimal pid ${minimal.pid} (written when they stop)`);
    const targets: Target[] = [
      { name: 'minimal', base: `http://127.0.0.1:${minPort}`, pid: minimal.pid ?? NaN, headers: {}, ids: [] },
      {
        name: 'gateway',
        base: `http://127.0.0.1:${edgePort}`,
        pid: edge.pid ?? NaN,
        headers: { authorization: auths[0] },
        ids: [],
        ...(ACCOUNTS > 1 ? { auths } : {}),
      },
    ];
    if (baseline) targets.push({ ...targets[1], name: 'baseline', base: `http://127.0.0.1:${basePort}`, pid: baseline.pid ?? NaN, ids: [] });
    // the edge's resident set after start-up, before any request: what the catalog and the loaded libraries cost
    const edgeStartRss = memMiB(targets[1].pid, 'VmHWM');
    const baseStartRss = baseline ? memMiB(targets[2]!.pid, 'VmHWM') : NaN;
    for (const t of targets) await warmUp(t);

    const results: Record<string, Record<string, Run[]>> = {};
    for (const which of PATHS) {
      results[which] = { minimal: [], gateway: [], baseline: [] };
      for (let round = 0; round < ROUNDS; round++) {
        // each round starts with the next server: none is always the one measured on the fullest tables
        for (let i = 0; i < targets.length; i++) {
          const t = targets[(round + i) % targets.length]!;
          results[which][t.name].push(await measure(t, which));
        }
      }
    }
    const edgeRss = memMiB(targets[1].pid, 'VmHWM');
    const minRss = memMiB(targets[0].pid, 'VmHWM');

    const summary = PATHS.map((which) => {
      const pick = (name: string) => {
        const runs = results[which][name];
        return {
          rps: median(runs.map((r) => r.rps)),
          p99: median(runs.map((r) => r.p99)),
          cpu: median(runs.map((r) => r.cpuUsPerReq)),
          bad: runs.reduce((s, r) => s + r.bad, 0),
        };
      };
      const m = pick('minimal');
      const g = pick('gateway');
      // the median of each round's ratio (the two servers measured back to back): a drift of the shared machine
      // between rounds moves both sides of a round's ratio, not one side of the medians' ratio
      const perRound = results[which].gateway.map((r, i) => (100 * r.rps) / results[which].minimal[i]!.rps);
      return { which, m, g, ratio: median(perRound) };
    });
    const failures = summary.reduce((s, x) => s + x.m.bad + x.g.bad, 0);
    const date = new Date().toISOString().slice(0, 16).replace('T', ' ');
    const machine = `${os.cpus().length}× ${os.cpus()[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
    console.log(
      `\n${date} · ${machine} · ${CONNECTIONS} connections · ${ROUNDS} × ${SECONDS} s (median) · ${ACCOUNTS} account(s)${FAIR_USE ? ' · fair-use checks on' : ''}${PROTOTYPED ? ' · minimal server prototyped' : ''}${process.env.BENCH_NOTE ? ` · ${process.env.BENCH_NOTE}` : ''}`,
    );
    console.log('path    | minimal req/s (p99, CPU/req) | gateway req/s (p99, CPU/req) | gateway / minimal');
    for (const s of summary) {
      console.log(
        `${s.which.padEnd(7)} | ${s.m.rps.toFixed(0)}/s (p99 ${s.m.p99} ms, ${s.m.cpu.toFixed(0)} µs) | ${s.g.rps.toFixed(0)}/s (p99 ${s.g.p99} ms, ${s.g.cpu.toFixed(0)} µs) | ${s.ratio.toFixed(1)} %`,
      );
    }
    console.log(
      `peak RSS: edge ${edgeRss.toFixed(0)} MiB (${edgeStartRss.toFixed(0)} after start-up), minimal ${minRss.toFixed(0)} MiB · non-2xx/errors/timeouts: ${failures}`,
    );
    console.log(
      `edge memory vs issue 39's targets: ${againstTarget('peak', edgeRss, PEAK_TARGET_MB)} · ${againstTarget('after start-up', edgeStartRss, START_TARGET_MB)}`,
    );
    if (baseline) {
      const baseRss = memMiB(targets[2]!.pid, 'VmHWM');
      console.log(`A/B memory | baseline ${BASELINE}: peak RSS ${baseRss.toFixed(0)} MiB (${baseStartRss.toFixed(0)} after start-up)`);
      for (const which of PATHS) {
        const { gateway, baseline: base } = results[which];
        const perRound = gateway.map((r, i) => (100 * r.rps) / base[i]!.rps);
        const b = { rps: median(base.map((r) => r.rps)), cpu: median(base.map((r) => r.cpuUsPerReq)), bad: base.reduce((n, r) => n + r.bad, 0) };
        console.log(
          `A/B ${which.padEnd(7)}| baseline ${BASELINE}: ${b.rps.toFixed(0)}/s (${b.cpu.toFixed(0)} µs/req, ${b.bad} bad) · this edge / baseline: ${median(perRound).toFixed(1)} % of the requests, ${((100 * median(gateway.map((r) => r.cpuUsPerReq))) / b.cpu).toFixed(1)} % of the CPU per request`,
        );
      }
    }

    const cell = (which: string) => {
      const s = summary.find((x) => x.which === which);
      return s
        ? `${s.g.rps.toFixed(0)} vs ${s.m.rps.toFixed(0)}/s (**${s.ratio.toFixed(1)} %**), p99 ${s.g.p99} vs ${s.m.p99} ms, CPU ${s.g.cpu.toFixed(0)} vs ${s.m.cpu.toFixed(0)} µs/req`
        : '—';
    };
    if (!profDir && !baseline)
      insertRow(
        '| date (UTC) | change |',
        `| ${date} | ${process.env.BENCH_NOTE ?? '—'} | ${machine} | ${CONNECTIONS} conns, ${ROUNDS} × ${SECONDS} s, ${ACCOUNTS} account${ACCOUNTS > 1 ? 's' : ''}${FAIR_USE ? ', fair-use checks on' : ''}${PROTOTYPED ? ', minimal server prototyped' : ''} | ${cell('submit')} | ${cell('poll')} | ${edgeRss.toFixed(0)} MiB | ${failures} |`,
      );
    if (failures > 0) process.exitCode = 1;
  } finally {
    await Promise.all([stop(edge), stop(minimal), stop(baseline)]);
    await deleteRedisPrefix(redis, prefix);
    redis.disconnect();
    await db.drop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
