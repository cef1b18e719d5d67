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
 *       # EXPLAIN (ANALYZE, BUFFERS) of the hold statements on the grown tables and each edge's CPU profile summary
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
import { REPO_ROOT, TEST_REDIS_URL, createTestDatabase, deleteRedisPrefix, freePort, uniqueRedisPrefix } from '@gmg/testing';
import { startNode, stop } from './bench-process';

const EDGES_ENV = Number(process.env.BENCH_CEILING_EDGES ?? 0);
const SUSTAINED = process.env.BENCH_CEILING_SUSTAINED === '1';
/** Whether `npm run bench -- ceiling` runs a fleet mode instead of the gateway-versus-minimal comparison. */
export const FLEET_MODE = EDGES_ENV >= 2 || SUSTAINED;
const EDGES = Math.max(1, Math.min(EDGES_ENV || 2, 8));
const ROUNDS = Math.max(1, Math.min(Number(process.env.BENCH_CEILING_ROUNDS ?? 2), 20));
const SECONDS = Math.max(1, Math.min(Number(process.env.BENCH_CEILING_SECONDS ?? 10), 120));
const MINUTES = Math.max(1, Math.min(Number(process.env.BENCH_SUSTAINED_MINUTES ?? 10), 120));
const CONNECTIONS = Math.max(EDGES, Math.min(Number(process.env.BENCH_CEILING_CONNECTIONS ?? 100), 1000));
const LEASE_UNITS = process.env.BENCH_TASK_LEASE_UNITS ?? '20';
const SPREAD = 100;
const BODY = JSON.stringify({ model: 'lumen-2-flex', prompt: 'benchmark', resolution: '1MP' });

interface Edge {
  proc: ChildProcess;
  base: string;
}

/** Submits for `seconds` through every edge at once (connections split evenly); requests per second in total. */
async function load(edges: Edge[], auths: string[], seconds: number): Promise<{ rps: number; bad: number }> {
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
  return { rps: total / seconds, bad: runs.reduce((s, r) => s + r.non2xx + r.errors + r.timeouts, 0) };
}

/**
 * The ledger after the run, every account: `available + held = topups − captures`, nothing negative, one `hold` per
 * task, no lease left open (the edges closed theirs at shutdown), `held` = the tasks' prices (nothing settles here),
 * and the in-flight counter equal to the open tasks. Returns the violations (none: []).
 */
async function ledgerViolations(ds: DataSource): Promise<string[]> {
  const rows: Array<{ what: string; n: number }> = await ds.query(`
    SELECT 'balance (available + held != topups - captures, or negative)' AS what, count(*)::int AS n FROM accounts a
      WHERE a.available < 0 OR a.held < 0 OR a.available + a.held != (SELECT COALESCE(sum(CASE kind WHEN 'topup' THEN amount WHEN 'capture' THEN -amount ELSE 0 END), 0) FROM ledger_entries e WHERE e.account_id = a.id)
    UNION ALL SELECT 'held != Σ unsettled task prices', count(*)::int FROM accounts a
      WHERE a.held != (SELECT COALESCE(sum(price), 0) FROM tasks t WHERE t.account_id = a.id AND t.settled_at IS NULL)
    UNION ALL SELECT 'tasks without exactly one hold', count(*)::int FROM tasks t
      WHERE (SELECT count(*) FROM ledger_entries e WHERE e.task_id = t.id AND e.kind = 'hold') != 1
    UNION ALL SELECT 'leases still active', count(*)::int FROM credit_leases WHERE status = 'active'
    UNION ALL SELECT 'closed leases with hold != used + release', count(*)::int FROM credit_leases l
      WHERE l.amount != l.used + (SELECT COALESCE(sum(amount), 0) FROM ledger_entries e WHERE e.task_id = l.id AND e.kind = 'release')
         OR l.used != (SELECT COALESCE(sum(amount), 0) FROM ledger_entries e WHERE e.kind = 'hold' AND e.meta->>'lease' = l.id)
    UNION ALL SELECT 'keys whose in-flight counter != open tasks', count(*)::int FROM api_keys k
      WHERE (SELECT COALESCE(sum(open), 0) FROM task_inflight c WHERE c.api_key_id = k.id)
         != (SELECT count(*) FROM tasks t WHERE t.api_key_id = k.id AND t.status IN ('pending','processing') AND t.inflight_shard IS NOT NULL)`);
  return rows.filter((r) => r.n > 0).map((r) => `${r.what}: ${r.n}`);
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

export async function runFleet(): Promise<void> {
  const db = await createTestDatabase('gmg_bench_fleet');
  const prefix = uniqueRedisPrefix();
  const redis = new Redis(TEST_REDIS_URL);
  const edges: Edge[] = [];
  const profDir = SUSTAINED ? mkdtempSync(path.join(os.tmpdir(), 'gmg-fleet-prof-')) : undefined;
  const date = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const machine = `${os.cpus().length}× ${os.cpus()[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  try {
    await loadPrices(db.dataSource, path.join(REPO_ROOT, 'infra/prices.json'));
    const { auths, ids } = await setUp(db.dataSource, SPREAD);
    for (let i = 0; i < EDGES; i++) {
      const port = await freePort();
      const proc = await startNode(
        'services/api-edge/src/main.ts',
        port,
        {
          DATABASE_URL: db.url,
          REDIS_URL: TEST_REDIS_URL,
          QUEUE_PREFIX: `${prefix}:fleet`,
          LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
          ADMIN_TOKEN: 'bench-admin-token-0123456789abcdef',
          TASK_LEASE_UNITS: LEASE_UNITS,
        },
        profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
      );
      edges.push({ proc, base: `http://127.0.0.1:${port}` });
    }
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
      for (let m = 0; m < MINUTES; m++) {
        const r = await load(edges, one, 60);
        bad += r.bad;
        perMinute.push(r.rps);
        const [{ n }]: Array<{ n: number }> = await db.dataSource.query(`SELECT count(*)::int AS n FROM tasks`);
        console.log(`minute ${m + 1}: ${r.rps.toFixed(0)} submits/s · ${n} tasks accumulated`);
      }
      const first = perMinute[0]!;
      const last = perMinute[perMinute.length - 1]!;
      console.log(`\n${date} · ${machine} · ${EDGES} edges · ${CONNECTIONS} connections · 1 account · ${MINUTES} min · TASK_LEASE_UNITS=${LEASE_UNITS}`);
      console.log(
        `first minute ${first.toFixed(0)}/s → last minute ${last.toFixed(0)}/s: ${((100 * (last - first)) / first).toFixed(1)} % (target: no worse than −10 %)`,
      );
      console.log(`\nEXPLAIN of the hold statements at the end:\n${await explainHolds(db.dataSource, ids[0]!.accountId, ids[0]!.keyId)}`);
    }
    console.log(`non-2xx/errors/timeouts: ${bad}`);
    // their leases close at shutdown: then every account's money must be exactly its tasks' holds
    await Promise.all(edges.map((e) => stop(e.proc)));
    const [held]: Array<{ leased: number; tasks: number; leases: number }> = await db.dataSource.query(
      `SELECT count(*) FILTER (WHERE meta ? 'lease')::int AS leased, count(*)::int AS tasks,
              (SELECT count(*) FROM credit_leases)::int AS leases
       FROM ledger_entries WHERE kind = 'hold' AND task_id LIKE 'task\\_%'`,
    );
    console.log(`tasks held from leases: ${held!.leased} of ${held!.tasks} (${held!.leases} leases granted)`);
    const violations = await ledgerViolations(db.dataSource);
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
    await Promise.all(edges.map((e) => stop(e.proc)));
    await deleteRedisPrefix(redis, prefix);
    redis.disconnect();
    await db.drop();
  }
}
