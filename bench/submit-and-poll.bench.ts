/**
 * Benchmark: submit throughput and latency, task-poll latency, end-to-end drain rate and process memory,
 * with every part real (api-edge, worker-image, billing, upstream-sim as processes; Postgres; Redis).
 * Loopback only; every loop is bounded in count and time. Writes a row to docs/benchmarks.md.
 *
 *   npm run bench                      # defaults
 *   BENCH_TASKS=500 BENCH_CONCURRENCY=20 npm run bench
 */
import { insertRow } from './doc-table';
import os from 'node:os';
import { AccountRepository, ApiKeyRepository } from '@gmg/db';
import { startSimStack, waitFor } from '@gmg/testing';
import { pct, treeMemMiB } from './proc-stats';

/** The bench measures the gateway's capacity, not the fair-use defaults of the `default` group (docs/rate-limits.md). */
const BENCH_KEY_LIMITS = { rpsLimit: 1_000_000, inflightLimit: 1_000_000 };

const TASKS = Math.min(Number(process.env.BENCH_TASKS ?? 2000), 20_000);
const CONCURRENCY = Math.min(Number(process.env.BENCH_CONCURRENCY ?? 50), 500);
const POLLS = Math.min(Number(process.env.BENCH_POLLS ?? 5000), 50_000);
const MAX_SECONDS = 600;

const ms = (n: number) => `${n.toFixed(1)} ms`;

/** Runs `total` calls of `fn` with `concurrency` in flight; returns per-call latencies (ms). */
async function load(total: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<{ lat: number[]; seconds: number }> {
  const lat: number[] = [];
  let next = 0;
  const deadline = Date.now() + MAX_SECONDS * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total && Date.now() < deadline) {
        const i = next++;
        const s = performance.now();
        await fn(i);
        lat.push(performance.now() - s);
      }
    }),
  );
  return { lat: lat.sort((a, b) => a - b), seconds: (performance.now() - t0) / 1000 };
}

async function main(): Promise<void> {
  const stack = await startSimStack({ database: 'gmg_bench', timeScale: '0.05', logLevel: 'error' });
  const { db } = stack;
  try {
    const [edge, worker, billing] = await Promise.all([
      stack.start('api-edge', { ADMIN_TOKEN: 'bench-admin-token-0123456789abcdef' }),
      stack.start('worker-image', { POLL_INTERVAL_SCALE: '0.1', WORKER_CONCURRENCY: '100' }),
      stack.start('billing'),
    ]);
    const accounts = new AccountRepository(db.dataSource);
    const acc = await accounts.create({ name: 'bench' });
    await accounts.topup(acc.id, 10n ** 15n);
    const key = (await new ApiKeyRepository(db.dataSource).create({ accountId: acc.id, ...BENCH_KEY_LIMITS })).secret;
    const base = edge.url;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const body = JSON.stringify({ model: 'lumen-2-flex', prompt: 'benchmark', resolution: '1MP' });

    const ids: string[] = [];
    let failures = 0;
    const submit = await load(TASKS, CONCURRENCY, async () => {
      const r = await fetch(`${base}/v1/images/generations`, { method: 'POST', headers, body });
      const j = (await r.json()) as { data?: Array<{ task_id: string }> };
      if (r.status === 200 && j.data?.[0]) ids.push(j.data[0].task_id);
      else failures++;
    });
    const poll = await load(POLLS, CONCURRENCY, async (i) => {
      const r = await fetch(`${base}/v1/tasks/${ids[i % ids.length]}`, { headers });
      await r.arrayBuffer();
      if (r.status !== 200) failures++;
    });
    const drainStart = Date.now();
    await waitFor(
      async () => {
        const [{ n }] = await db.dataSource.query<Array<{ n: number }>>(`SELECT count(*)::int AS n FROM tasks WHERE status IN ('pending','processing')`);
        return n === 0;
      },
      { timeoutMs: MAX_SECONDS * 1000, intervalMs: 250, what: 'all tasks finished' },
    );
    const endToEnd = (Date.now() - drainStart) / 1000 + submit.seconds;

    const row = {
      date: new Date().toISOString().slice(0, 16).replace('T', ' '),
      machine: `${os.cpus().length}× ${os.cpus()[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
      tasks: ids.length,
      concurrency: CONCURRENCY,
      submitRate: (ids.length / submit.seconds).toFixed(0),
      submitP50: ms(pct(submit.lat, 50)),
      submitP99: ms(pct(submit.lat, 99)),
      pollRate: (POLLS / poll.seconds).toFixed(0),
      pollP50: ms(pct(poll.lat, 50)),
      pollP99: ms(pct(poll.lat, 99)),
      drainRate: (ids.length / endToEnd).toFixed(0),
      rss: `edge ${treeMemMiB(edge.proc.proc.pid, 'VmHWM').toFixed(0)} / worker ${treeMemMiB(worker.proc.proc.pid, 'VmHWM').toFixed(0)} / billing ${treeMemMiB(billing.proc.proc.pid, 'VmHWM').toFixed(0)} MiB`,
      failures,
    };
    console.log(JSON.stringify(row, null, 2));
    insertRow(
      '| date (UTC) | machine | tasks @ in flight |',
      `| ${row.date} | ${row.machine} | ${row.tasks} @ ${row.concurrency} | ${row.submitRate}/s, p50 ${row.submitP50}, p99 ${row.submitP99} | ${row.pollRate}/s, p50 ${row.pollP50}, p99 ${row.pollP99} | ${row.drainRate} tasks/s | ${row.rss} | ${row.failures} |`,
    );
    if (failures > 0) process.exitCode = 1;
  } finally {
    await stack.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
