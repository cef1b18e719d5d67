/**
 * `npm run bench -- worker`: one worker-image process (WORKER_CONCURRENCY 50) tracking N in-flight tasks that never
 * finish upstream (`[sim:never]` prompts, the upstream simulator as a real process) — issue 13 item 3.
 *
 * The tasks are submitted through api-edge (the real path: hold, task row, view, enqueue) with the worker not yet
 * running; the edge is then stopped, so during the measurement only the worker, the simulator, Postgres, Redis and
 * this process use the machine. The worker then submits every task upstream and polls each one at the image
 * contract's interval (uniform 2–5 s) times POLL_INTERVAL_SCALE: the default scale 5000 / 3500 makes the mean 5 s,
 * the issue's cadence (BENCH_WORKER_POLL_SCALE overrides it). Once at least 95 % of the task jobs wait in the
 * delayed set (or after 120 s, when the worker cannot keep up: it then measures that saturated state), a warm-up of
 * BENCH_WORKER_WARMUP_S (10 s) runs, then a window of BENCH_WORKER_SECONDS (60 s).
 *
 * Lateness of a poll = when the worker took the job (BullMQ `processedOn`, set by moveToActive) − when the job was
 * due (its score in the delayed set, ms × 0x1000 + a counter). A sample of BENCH_WORKER_SAMPLE (200) task jobs is
 * read every 100 ms in one pipeline (ZSCORE delayed + HGET processedOn each): a job seen in the delayed set gives
 * its due time; the next processedOn at or after it gives one lateness sample. Every poll interval is ≥ 2.8 s, so a
 * 100 ms read sees every delayed period. Polls per second are estimated from the sample (polls seen per sampled job
 * × N / window). Worker CPU (utime + stime, /proc) over the window, and its RSS at the end and peak (VmHWM). Redis
 * commands per poll: INFO `total_commands_processed` delta over the window, minus the sampler's own commands
 * (the Redis server is shared with whatever else runs on the machine: an upper bound). Postgres transactions per
 * poll: pg_stat_database xact_commit + xact_rollback of the bench database over the window (read with psql).
 *
 *   npm run bench -- worker                                   # 2,000 tasks, 60 s window
 *   BENCH_WORKER_TASKS=5000 npm run bench -- worker
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { taskJobId } from '@gmg/contracts';
import { AccountRepository, ApiKeyRepository, ChannelRepository, GroupRepository, loadPrices } from '@gmg/db';
import { createTaskQueue } from '@gmg/queue';
import { REPO_ROOT, TEST_REDIS_URL, createTestDatabase, deleteRedisPrefix, freePort, startService, uniqueRedisPrefix, waitFor, type ServiceProcess } from '@gmg/testing';
import { insertRow } from './doc-table';
import { cpuSeconds, memMiB, pct } from './proc-stats';

const TASKS = Math.max(1, Math.min(Number(process.env.BENCH_WORKER_TASKS ?? 2000), 20_000));
const SECONDS = Math.max(5, Math.min(Number(process.env.BENCH_WORKER_SECONDS ?? 60), 300));
const WARMUP_S = Math.max(0, Math.min(Number(process.env.BENCH_WORKER_WARMUP_S ?? 10), 120));
const SAMPLE = Math.max(1, Math.min(Number(process.env.BENCH_WORKER_SAMPLE ?? 200), 2000));
const POLL_SCALE = process.env.BENCH_WORKER_POLL_SCALE ?? String(5000 / 3500);
/** WORKER_CONCURRENCY of the worker under test (the service's default is 50). */
const WORKER_CONCURRENCY = process.env.BENCH_WORKER_CONCURRENCY ?? '50';
const SUBMIT_CONCURRENCY = 50;
const BODY = JSON.stringify({ model: 'lumen-2-flex', prompt: 'bench worker capacity [sim:never]', resolution: '1MP' });

async function redisCommands(redis: Redis): Promise<number> {
  return Number(/total_commands_processed:(\d+)/.exec(await redis.info('stats'))?.[1] ?? NaN);
}

function pgTransactions(dbName: string): number {
  const out = execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', dbName, '-Atc',
    `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`], { encoding: 'utf8' });
  return Number(out.trim());
}

async function main(): Promise<void> {
  const db = await createTestDatabase('gmg_bench_wrk');
  const dbName = new URL(db.url).pathname.slice(1);
  const prefix = uniqueRedisPrefix();
  const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  const procs: ServiceProcess[] = [];
  try {
    await loadPrices(db.dataSource, path.join(REPO_ROOT, 'infra/prices.json'));
    const [simPort, edgePort, workerPort] = await Promise.all([freePort(), freePort(), freePort()]);
    const common = { DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix, LOG_LEVEL: 'error' };
    const sim = await startService('upstream-sim', { PORT: String(simPort), LOG_LEVEL: 'error' }, `http://127.0.0.1:${simPort}/healthz`);
    procs.push(sim);
    await new ChannelRepository(db.dataSource).create({ name: 'sim', baseUrl: `http://127.0.0.1:${simPort}` });
    const accounts = new AccountRepository(db.dataSource);
    const acc = await accounts.create({ name: 'bench-worker' });
    await accounts.topup(acc.id, 10n ** 15n);
    await new GroupRepository(db.dataSource).upsert({ name: 'bench-unlimited', priceRatio: 1, models: null, rpsLimit: null, inflightLimit: null });
    const { secret } = await new ApiKeyRepository(db.dataSource).create({ accountId: acc.id, groupName: 'bench-unlimited' });

    // 1. submit N tasks through the edge, worker not running yet
    const edge = await startService('api-edge', { ...common, PORT: String(edgePort), ADMIN_TOKEN: 'bench-admin-token-0123456789abcdef' }, `http://127.0.0.1:${edgePort}/healthz`);
    procs.push(edge);
    const ids: string[] = [];
    let next = 0;
    const t0 = Date.now();
    await Promise.all(Array.from({ length: SUBMIT_CONCURRENCY }, async () => {
      while (next < TASKS && Date.now() - t0 < 600_000) {
        next++;
        const r = await fetch(`http://127.0.0.1:${edgePort}/v1/images/generations`, {
          method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: BODY,
        });
        const j = (await r.json()) as { data?: Array<{ task_id: string }> };
        if (r.status !== 200 || !j.data?.[0]) throw new Error(`submit: ${r.status} ${JSON.stringify(j)}`);
        ids.push(j.data[0].task_id);
      }
    }));
    if (ids.length !== TASKS) throw new Error(`submitted ${ids.length} of ${TASKS}`);
    console.log(`submitted ${TASKS} [sim:never] tasks through the edge in ${((Date.now() - t0) / 1000).toFixed(1)} s; edge stopped`);
    await edge.stop();
    procs.splice(procs.indexOf(edge), 1);

    // 2. the worker takes them all upstream and settles into polling
    const worker = await startService('worker-image', {
      ...common, HEALTH_PORT: String(workerPort), WORKER_CONCURRENCY: WORKER_CONCURRENCY, POLL_INTERVAL_SCALE: POLL_SCALE,
    }, `http://127.0.0.1:${workerPort}/healthz`, 60_000, undefined,
    // e.g. BENCH_WORKER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" (written when the bench stops the worker)
    process.env.BENCH_WORKER_NODE_ARGS?.split(' ').filter(Boolean) ?? []);
    procs.push(worker);
    const pid = worker.proc.pid ?? NaN;
    const queue = createTaskQueue('image', redis, prefix);
    const t1 = Date.now();
    // a worker that cannot keep up never gets there (promoted jobs pile up in the wait list): after 120 s the
    // bench measures that saturated state instead of giving up
    const settled = await waitFor(async () => (await queue.getDelayedCount()) >= 0.95 * TASKS, { timeoutMs: 120_000, intervalMs: 250, what: '95 % delayed' })
      .then(() => true, () => false);
    const c = await queue.getJobCounts('waiting', 'delayed', 'active');
    console.log(`${settled ? 'worker submitted them upstream' : 'NOT 95 % delayed (saturated)'} after ${((Date.now() - t1) / 1000).toFixed(1)} s (${JSON.stringify(c)}); warm-up ${WARMUP_S} s, window ${SECONDS} s`);
    await new Promise<void>((resolve) => { const t = setTimeout(resolve, WARMUP_S * 1000); t.unref?.(); });

    // 3. the window: sample lateness, count CPU, Redis commands, Postgres transactions
    const sample = ids.slice().sort(() => Math.random() - 0.5).slice(0, SAMPLE);
    const delayedKey = queue.keys.delayed;
    const jobKeys = sample.map((id) => queue.toKey(taskJobId(id)));
    const due = new Map<number, number>();
    const lastProcessed = new Map<number, number>();
    const lateness: number[] = [];
    let sampledPolls = 0;
    let samplerCommands = 0;
    const cpu0 = cpuSeconds(pid);
    const simPid = sim.proc.pid ?? NaN;
    const simCpu0 = cpuSeconds(simPid);
    const redis0 = await redisCommands(redis);
    const pg0 = pgTransactions(dbName);
    const w0 = Date.now();
    const deadline = w0 + SECONDS * 1000;
    for (let tick = 0; Date.now() < deadline && tick < SECONDS * 20; tick++) {
      const started = Date.now();
      const p = redis.pipeline();
      sample.forEach((id, i) => { p.zscore(delayedKey, taskJobId(id)); p.hget(jobKeys[i], 'processedOn'); });
      const res = (await p.exec()) ?? [];
      samplerCommands += sample.length * 2;
      sample.forEach((_, i) => {
        const score = res[2 * i]?.[1] as string | null;
        const processedOn = Number(res[2 * i + 1]?.[1] ?? NaN);
        const prev = lastProcessed.get(i);
        if (prev !== undefined && processedOn > prev) {
          sampledPolls++;
          const d = due.get(i);
          if (d !== undefined && processedOn >= d - 1) lateness.push(processedOn - d);
          due.delete(i);
        }
        lastProcessed.set(i, processedOn);
        if (score !== null) due.set(i, Math.floor(Number(score) / 0x1000));
      });
      const wait = 100 - (Date.now() - started);
      if (wait > 0) await new Promise<void>((resolve) => setTimeout(resolve, wait));
    }
    const window = (Date.now() - w0) / 1000;
    const cpu = cpuSeconds(pid) - cpu0;
    const simCpu = cpuSeconds(simPid) - simCpu0;
    const redisCmds = (await redisCommands(redis)) - redis0 - samplerCommands - 2;
    const pgTx = pgTransactions(dbName) - pg0 - 1;
    const rss = memMiB(pid, 'VmRSS');
    const hwm = memMiB(pid, 'VmHWM');
    const counts = await queue.getJobCounts('waiting', 'delayed', 'active', 'completed', 'failed');
    await queue.close();

    lateness.sort((a, b) => a - b);
    const pollsPerS = (sampledPolls / sample.length) * TASKS / window;
    const cadence = (sample.length * window) / Math.max(sampledPolls, 1);
    const date = new Date().toISOString().slice(0, 16).replace('T', ' ');
    const machine = `${os.cpus().length}× ${os.cpus()[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
    const late = `p50 ${pct(lateness, 50).toFixed(0)} ms, p99 ${pct(lateness, 99).toFixed(0)} ms, max ${(lateness[lateness.length - 1] ?? NaN).toFixed(0)} ms (${lateness.length} polls sampled)`;
    const perPoll = `Redis ≤ ${(redisCmds / (pollsPerS * window)).toFixed(1)} commands, Postgres ${(pgTx / (pollsPerS * window)).toFixed(2)} transactions`;
    console.log(`\n${date} · ${machine}${process.env.BENCH_NOTE ? ` · ${process.env.BENCH_NOTE}` : ''}`);
    console.log(`worker-image (concurrency ${WORKER_CONCURRENCY}, POLL_INTERVAL_SCALE ${Number(POLL_SCALE).toFixed(3)}) tracking ${TASKS} tasks, ${window.toFixed(1)} s window`);
    console.log(`polls: ~${pollsPerS.toFixed(0)}/s (one per task every ${cadence.toFixed(2)} s on average; due every 5 s at scale 1.429)`);
    console.log(`lateness (processedOn − due): ${late}`);
    console.log(`worker CPU ${cpu.toFixed(1)} s = ${(100 * cpu / window).toFixed(0)} % of a core, ${((cpu * 1e3) / (pollsPerS * window)).toFixed(2)} ms per poll; RSS ${rss.toFixed(0)} MiB at the end, peak ${hwm.toFixed(0)} MiB`);
    console.log(`upstream simulator CPU ${simCpu.toFixed(1)} s = ${(100 * simCpu / window).toFixed(0)} % of a core, ${((simCpu * 1e3) / (pollsPerS * window)).toFixed(2)} ms per poll`);
    console.log(`per poll: ${perPoll}; jobs at the end: ${JSON.stringify(counts)}`);
    insertRow('| date (UTC) | change | machine | tasks |',
      `| ${date} | ${process.env.BENCH_NOTE ?? '—'} | ${machine} | ${TASKS} @ scale ${Number(POLL_SCALE).toFixed(3)}, ${window.toFixed(0)} s | ~${pollsPerS.toFixed(0)}/s (every ${cadence.toFixed(2)} s) | ${late} | ${(100 * cpu / window).toFixed(0)} % of a core, ${((cpu * 1e3) / (pollsPerS * window)).toFixed(2)} ms/poll | ${rss.toFixed(0)} MiB (peak ${hwm.toFixed(0)}) | ${perPoll} |`);
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await deleteRedisPrefix(redis, prefix);
    redis.disconnect();
    await db.drop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
