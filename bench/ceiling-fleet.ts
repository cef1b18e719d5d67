/**
 * The fleet modes of `npm run bench -- ceiling` (issue 23.2, docs/reliability.md "Hot accounts"): several api-edge
 * processes against one Postgres and Redis, submits only, the load split evenly over the edges.
 *
 *   BENCH_CEILING_EDGES=2 npm run bench -- ceiling
 *       # two-edge mode: the same edges submitting for ONE account, then spread over 100 accounts (alternating,
 *       # BENCH_CEILING_ROUNDS rounds of BENCH_CEILING_SECONDS each); prints both figures and one / hundred, then
 *       # stops the edges (their leases close) and checks the ledger of every account
 *   BENCH_CEILING_SUSTAINED=1 BENCH_SUSTAINED_MINUTES=10 npm run bench -- ceiling
 *       # sustained mode: one account submitting for that long through BENCH_CEILING_EDGES edges (default 2) with
 *       # its tasks accumulating (nothing finishes them); prints the rate per minute and first → last minute, then
 *       # EXPLAIN (ANALYZE, BUFFERS) of the hold statements on the grown tables and each edge's CPU profile summary.
 *       # Each minute ends with BENCH_SUSTAINED_CONTROL_SECONDS (default 15; 0: none) of the same load through as many
 *       # edges of a control database made fresh for that minute (its tasks: that window's only): the same Postgres,
 *       # Redis and cores in the same minute, without the grown tables, so grown / control tells what the
 *       # accumulation costs from what the host's speed did meanwhile (a shared 2-core VM drifts by tens of percent
 *       # over ten minutes: docs/benchmarks.md). Both sides get 2 s unmeasured before each window (their edges idled).
 *
 * The keys carry an in-flight limit they never reach (so every hold reads the in-flight counter) and no
 * requests-per-second limit. Edges run with TASK_LEASE_UNITS=BENCH_TASK_LEASE_UNITS (default 20). Loopback only;
 * every run bounded in time. Figures from a shared machine are noisy: the printed line says where it ran.
 */
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import { AccountRepository, ApiKeyRepository, GroupRepository, HOLD_LEASED_SQL, HOLD_MANY_SQL, loadPrices, newTaskId, toHoldRow, type NewTask } from '@gmg/db';
import { REPO_ROOT, TEST_REDIS_URL, checkLedger, createTestDatabase, deleteRedisPrefix, freePort, uniqueRedisPrefix, type TestDatabase } from '@gmg/testing';
import { startNode, stop } from './bench-process';

const EDGES_ENV = Number(process.env.BENCH_CEILING_EDGES ?? 0);
const SUSTAINED = process.env.BENCH_CEILING_SUSTAINED === '1';
/** Whether `npm run bench -- ceiling` runs a fleet mode instead of the gateway-versus-minimal comparison. */
export const FLEET_MODE = EDGES_ENV >= 2 || SUSTAINED;
const EDGES = Math.max(1, Math.min(EDGES_ENV || 2, 8));
const ROUNDS = Math.max(1, Math.min(Number(process.env.BENCH_CEILING_ROUNDS ?? 2), 20));
const SECONDS = Math.max(1, Math.min(Number(process.env.BENCH_CEILING_SECONDS ?? 10), 120));
const MINUTES = Math.max(1, Math.min(Number(process.env.BENCH_SUSTAINED_MINUTES ?? 10), 120));
const CONTROL_SECONDS = Math.max(0, Math.min(Number(process.env.BENCH_SUSTAINED_CONTROL_SECONDS ?? 15), 30));
const CONNECTIONS = Math.max(EDGES, Math.min(Number(process.env.BENCH_CEILING_CONNECTIONS ?? 100), 1000));
const LEASE_UNITS = process.env.BENCH_TASK_LEASE_UNITS ?? '20';
const SPREAD = 100;
const BODY = JSON.stringify({ model: 'lumen-2-flex', prompt: 'benchmark', resolution: '1MP' });

interface Edge {
  proc: ChildProcess;
  base: string;
}

/** Submits for `seconds` through every edge at once (connections split evenly); requests per second in total. */
async function load(edges: Edge[], auths: string[], seconds: number): Promise<{ rps: number; ok: number; bad: number }> {
  const runs = await Promise.all(
    edges.map((e, k) => {
      let n = k;
      return autocannon({
        url: e.base,
        connections: Math.floor(CONNECTIONS / edges.length),
        duration: seconds,
        timeout: 30,
        headers: { 'content-type': 'application/json' },
        requests: [
          {
            method: 'POST',
            path: '/v1/images/generations',
            body: BODY,
            setupRequest: (req: autocannon.Request) => ({ ...req, headers: { ...req.headers, authorization: auths[n++ % auths.length]! } }),
          },
        ],
      });
    }),
  );
  const total = runs.reduce((s, r) => s + r.requests.total, 0);
  return { rps: total / seconds, ok: runs.reduce((s, r) => s + r['2xx'], 0), bad: runs.reduce((s, r) => s + r.non2xx + r.errors + r.timeouts, 0) };
}

/**
 * The ledger after the run, every account (checkLedger): `available + held = topups − captures`, nothing negative,
 * one `hold` per task, `held` = the unsettled tasks' prices (nothing settles here) plus no lease left open (the edges
 * closed theirs at shutdown), every closed lease exact, and the in-flight counter equal to the open tasks. Returns
 * the violations (none: []).
 */
async function ledgerViolations(ds: DataSource): Promise<string[]> {
  return (await checkLedger(ds, { leasesClosed: true })).map((v) => `${v.invariant}: ${v.count} (e.g. ${v.example})`);
}

/**
 * EXPLAIN (ANALYZE, BUFFERS) of the hold path's statements on the grown tables — a journal batch of 100 tasks under a
 * lease, the same batch as a row hold, the in-flight counter read — each in a transaction rolled back.
 */
async function explainHolds(ds: DataSource, accountId: string, keyId: string): Promise<string> {
  const tasks = Array.from({ length: 100 }, () =>
    toHoldRow({
      id: newTaskId(),
      accountId,
      apiKeyId: keyId,
      model: 'lumen-2-flex',
      requestedModel: 'lumen-2-flex',
      pool: 'image',
      request: JSON.parse(BODY) as NewTask['request'],
      price: 20_000n,
      priceSnapshot: {},
      deadlineAt: new Date(Date.now() + 3_600_000),
      inflightLimit: 100_000_000,
    }),
  );
  const statements: Array<[string, string, unknown[]]> = [
    ['journal (HOLD_LEASED_SQL), 100 tasks under one lease', HOLD_LEASED_SQL, [JSON.stringify(tasks.map((t) => ({ ...t, lease_id: 'lease_explain' }))), 0]],
    ['row hold (HOLD_MANY_SQL), the same 100 tasks', HOLD_MANY_SQL, [JSON.stringify(tasks), 0]],
    ['in-flight counter read', 'SELECT COALESCE(sum(open), 0) FROM task_inflight WHERE api_key_id = $1', [keyId]],
  ];
  const out: string[] = [];
  const qr = ds.createQueryRunner();
  try {
    for (const [name, sql, params] of statements) {
      await qr.startTransaction();
      await qr.query(
        `INSERT INTO credit_leases (id, account_id, edge_id, amount, expires_at) VALUES ('lease_explain', $1, 'bench', 1000000000000, now() + interval '1 minute')`,
        [accountId],
      );
      const plan = (await qr.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${sql}`, params)) as Array<{ 'QUERY PLAN': string }>;
      await qr.rollbackTransaction();
      out.push(`-- ${name}\n${plan.map((p) => p['QUERY PLAN']).join('\n')}`);
    }
  } finally {
    await qr.release();
  }
  return out.join('\n\n');
}

async function setUp(ds: DataSource, accounts: number): Promise<{ auths: string[]; ids: Array<{ accountId: string; keyId: string }> }> {
  await new GroupRepository(ds).upsert({ name: 'bench-unlimited', priceRatio: 1, models: null, rpsLimit: null, inflightLimit: null });
  const auths: string[] = [];
  const ids: Array<{ accountId: string; keyId: string }> = [];
  for (let i = 0; i < accounts; i++) {
    const acc = await new AccountRepository(ds).create({ name: `bench-fleet-${i}` });
    await new AccountRepository(ds).topup(acc.id, 10n ** 15n);
    const created = await new ApiKeyRepository(ds).create({ accountId: acc.id, groupName: 'bench-unlimited', inflightLimit: 100_000_000 });
    auths.push(`Bearer ${created.secret}`);
    ids.push({ accountId: acc.id, keyId: created.key.id });
  }
  return { auths, ids };
}

/** `EDGES` api-edge processes on `dbUrl`, queues under `queuePrefix`; with `profDir`, each writes a CPU profile there. */
async function startEdges(dbUrl: string, queuePrefix: string, profDir?: string): Promise<Edge[]> {
  const edges: Edge[] = [];
  for (let i = 0; i < EDGES; i++) {
    const port = await freePort();
    const proc = await startNode(
      'services/api-edge/src/main.ts',
      port,
      {
        DATABASE_URL: dbUrl,
        REDIS_URL: TEST_REDIS_URL,
        QUEUE_PREFIX: queuePrefix,
        LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
        ADMIN_TOKEN: 'bench-admin-token-0123456789abcdef',
        TASK_LEASE_UNITS: LEASE_UNITS,
      },
      profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
    );
    edges.push({ proc, base: `http://127.0.0.1:${port}` });
  }
  return edges;
}

export async function runFleet(): Promise<void> {
  const db = await createTestDatabase('gmg_bench_fleet');
  const withControl = SUSTAINED && CONTROL_SECONDS > 0;
  let control: TestDatabase | undefined;
  const prefix = uniqueRedisPrefix();
  const redis = new Redis(TEST_REDIS_URL);
  const edges: Edge[] = [];
  let controlEdges: Edge[] = [];
  const controlViolations: string[] = [];
  const profDir = SUSTAINED ? mkdtempSync(path.join(os.tmpdir(), 'gmg-fleet-prof-')) : undefined;
  const date = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const machine = `${os.cpus().length}× ${os.cpus()[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  try {
    await loadPrices(db.dataSource, path.join(REPO_ROOT, 'infra/prices.json'));
    const { auths, ids } = await setUp(db.dataSource, SPREAD);
    edges.push(...(await startEdges(db.url, `${prefix}:fleet`, profDir)));
    let controlAuth: string[] = [];
    /** The control of minute `m`: the last one's edges stopped (leases closed), its ledger checked, its database dropped; a new one. */
    const freshControl = async (m: number) => {
      await Promise.all(controlEdges.map((e) => stop(e.proc)));
      controlEdges = [];
      if (control) {
        controlViolations.push(...(await ledgerViolations(control.dataSource)).map((v) => `control of minute ${m}: ${v}`));
        await control.drop();
        control = undefined;
      }
      control = await createTestDatabase('gmg_bench_control');
      await loadPrices(control.dataSource, path.join(REPO_ROOT, 'infra/prices.json'));
      controlAuth = (await setUp(control.dataSource, 1)).auths;
      // profiled like the grown edges (the profiler's cost is in both sides of the ratio), their profiles not summarized
      controlEdges = await startEdges(control.url, `${prefix}:control${m}`, path.join(profDir!, 'control'));
    };
    const one = [auths[0]!];
    await load(edges, auths, 2); // warm-up: connections, caches, JIT
    let bad = 0;
    if (!SUSTAINED) {
      const oneRuns: number[] = [];
      const spreadRuns: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        // alternate which goes first: neither always meets the fuller tables
        for (const which of round % 2 === 0 ? ['one', 'spread'] : ['spread', 'one']) {
          const r = await load(edges, which === 'one' ? one : auths, SECONDS);
          bad += r.bad;
          (which === 'one' ? oneRuns : spreadRuns).push(r.rps);
          console.log(`round ${round + 1}: ${which === 'one' ? '1 account   ' : `${SPREAD} accounts`} ${r.rps.toFixed(0)} submits/s (${r.bad} bad)`);
        }
      }
      const perRound = oneRuns.map((r, i) => (100 * r) / spreadRuns[i]!);
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      console.log(`\n${date} · ${machine} · ${EDGES} edges · ${CONNECTIONS} connections · ${ROUNDS} × ${SECONDS} s · TASK_LEASE_UNITS=${LEASE_UNITS}`);
      console.log(
        `one account: ${median(oneRuns).toFixed(0)} submits/s · ${SPREAD} accounts: ${median(spreadRuns).toFixed(0)} submits/s · one / ${SPREAD}: ${median(perRound).toFixed(1)} % (median of the rounds' ratios; target ≥ 90 %)`,
      );
    } else {
      const perMinute: number[] = [];
      const ratios: number[] = [];
      // tasks counted from the answers (each 2xx is one task; the ~100 still in flight when a window ends are missed),
      // not by count(*): a scan of the grown table between windows would itself evict what the next window needs
      const countTasks = async (ds: DataSource) => ((await ds.query(`SELECT count(*)::int AS n FROM tasks`)) as Array<{ n: number }>)[0]!.n;
      let grownTasks = await countTasks(db.dataSource);
      for (let m = 0; m < MINUTES; m++) {
        if (withControl && m > 0) {
          // they idled through the control's turn: 2 s unmeasured (its tasks accumulate all the same)
          const warm = await load(edges, one, 2);
          bad += warm.bad;
          grownTasks += warm.ok;
        }
        const r = await load(edges, one, 60 - CONTROL_SECONDS);
        bad += r.bad;
        grownTasks += r.ok;
        perMinute.push(r.rps);
        let line = `minute ${m + 1}: ${r.rps.toFixed(0)} submits/s · ${grownTasks} tasks accumulated`;
        if (withControl) {
          await freshControl(m + 1);
          const warm = await load(controlEdges, controlAuth, 2);
          const c = await load(controlEdges, controlAuth, CONTROL_SECONDS);
          bad += warm.bad + c.bad;
          ratios.push(r.rps / c.rps);
          line += ` · control ${c.rps.toFixed(0)}/s (a fresh database: ${warm.ok + c.ok} tasks) · grown / control ${(100 * ratios[m]!).toFixed(1)} %`;
        }
        console.log(line);
      }
      const change = (xs: number[], digits: number) =>
        `${xs[0]!.toFixed(digits)} → ${xs[xs.length - 1]!.toFixed(digits)}: ${((100 * (xs[xs.length - 1]! - xs[0]!)) / xs[0]!).toFixed(1)} %`;
      console.log(
        `\n${date} · ${machine} · ${EDGES} edges · ${CONNECTIONS} connections · 1 account · ${MINUTES} min (${60 - CONTROL_SECONDS} s grown + ${CONTROL_SECONDS} s of a fresh control a minute) · TASK_LEASE_UNITS=${LEASE_UNITS}`,
      );
      console.log(`first minute → last minute, submits/s: ${change(perMinute, 0)} (target: no worse than −10 %)`);
      if (withControl)
        console.log(`first minute → last minute, grown / control (the host's drift taken out): ${change(ratios, 3)} (target: no worse than −10 %)`);
      if (withControl && ratios.length >= 4) {
        // one control window moves by ±10 % on its own: the first two minutes against the last two as well
        const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
        const head = mean(ratios.slice(0, 2));
        const tail = mean(ratios.slice(-2));
        console.log(`first two minutes → last two, grown / control: ${head.toFixed(3)} → ${tail.toFixed(3)}: ${((100 * (tail - head)) / head).toFixed(1)} %`);
      }
      console.log(`\nEXPLAIN of the hold statements at the end:\n${await explainHolds(db.dataSource, ids[0]!.accountId, ids[0]!.keyId)}`);
    }
    console.log(`non-2xx/errors/timeouts: ${bad}`);
    // their leases close at shutdown: then every account's money must be exactly its tasks' holds
    await Promise.all([...edges, ...controlEdges].map((e) => stop(e.proc)));
    const [held]: Array<{ leased: number; tasks: number; leases: number }> = await db.dataSource.query(
      `SELECT count(*) FILTER (WHERE meta ? 'lease')::int AS leased, count(*)::int AS tasks,
              (SELECT count(*) FROM credit_leases)::int AS leases
       FROM ledger_entries WHERE kind = 'hold' AND task_id LIKE 'task\\_%'`,
    );
    console.log(`tasks held from leases: ${held!.leased} of ${held!.tasks} (${held!.leases} leases granted)`);
    const violations = [
      ...(await ledgerViolations(db.dataSource)),
      ...controlViolations,
      ...(control ? (await ledgerViolations(control.dataSource)).map((v) => `control of minute ${MINUTES}: ${v}`) : []),
    ];
    console.log(
      violations.length === 0
        ? 'ledger after the run: every invariant holds (balance, one hold per task, leases closed exactly, in-flight counter)'
        : `LEDGER VIOLATIONS: ${violations.join('; ')}`,
    );
    if (profDir) {
      for (const f of readdirSync(profDir).filter((x) => x.endsWith('.cpuprofile'))) {
        console.log(`\nCPU profile ${f} (top 15 by self time):`);
        console.log(
          execFileSync(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'bench/profile-summary.ts'), path.join(profDir, f), '15'], {
            encoding: 'utf8',
          }),
        );
      }
    }
    if (violations.length > 0 || bad > 0) process.exitCode = 1;
  } finally {
    await Promise.all([...edges, ...controlEdges].map((e) => stop(e.proc)));
    await deleteRedisPrefix(redis, prefix);
    redis.disconnect();
    await db.drop();
    await control?.drop();
  }
}
