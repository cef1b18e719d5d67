/**
 * `npm run bench -- worker`: one worker-image process (WORKER_CONCURRENCY 50) tracking N in-flight tasks that never
 * finish upstream (`[sim:never]` prompts, the upstream simulator as a real process) — issues 13 and 22.
 *
 * The tasks are submitted through api-edge (the real path: hold, task row, view, enqueue) with the worker not yet
 * running; the edge is then stopped, so during the measurement only the worker, the simulator, Postgres, Redis and
 * this process use the machine. The worker then submits every task upstream and polls each one at the image
 * contract's interval (uniform 2–5 s) times POLL_INTERVAL_SCALE: the default scale 5000 / 3500 makes the mean 5 s,
 * the issue's cadence (BENCH_WORKER_POLL_SCALE overrides it). Once at least 95 % of the tasks are on the steady poll
 * path (each shard's due set, libs/queue/src/due-polls.ts; or after 120 s, when the worker cannot keep up: it then
 * measures that saturated state), a warm-up of BENCH_WORKER_WARMUP_S (10 s) runs, then a window of
 * BENCH_WORKER_SECONDS (60 s).
 *
 * Lateness of a poll = when the worker claimed it − when it was due: the worker's own histogram
 * gmg_poll_lateness_seconds, read from its /metrics before and after the window (quantiles interpolated within a
 * bucket, as Prometheus does; the share within 1 s is exact, 1 s being a bucket bound). Polls = the worker's
 * upstream poll calls (gmg_upstream_requests_total) over the window. Worker CPU (utime + stime, /proc) over the
 * window, and its RSS at the end and peak (VmHWM). Redis commands per poll: INFO commandstats deltas over the window,
 * by command (a script's own calls counted under their names; the Redis server is shared with whatever else runs on
 * the machine: an upper bound). Postgres transactions per poll: pg_stat_database xact_commit + xact_rollback of the
 * bench database over the window (read with psql).
 *
 *   npm run bench -- worker                                   # 2,000 tasks, 60 s window
 *   BENCH_WORKER_TASKS=10000 npm run bench -- worker          # the issue's 10,000
 *   BENCH_WORKER_TASKS=10000 BENCH_WORKER_SHARDS=2 npm run bench -- worker   # K = 2 shards, one worker process
 *   BENCH_WORKER_PROTOCOL=fal npm run bench -- worker         # the channel speaks fal's queue API (issue 34)
 *
 * Vendor callbacks (issue 35 item 8), in the same run: the worker has UPSTREAM_CALLBACK_BASE_URL (the edge), and
 * after the window the edge starts again and BENCH_WORKER_CALLBACK_TASKS (100) finishing tasks go to each of two fal
 * channels at once, one taking callbacks, one with `settings.callbacks: false` (bench/worker-callbacks.ts); the
 * bench prints upstream polls per completed task for each and the ratio (target ≤ 0.5). The main window's channel
 * has callbacks off, so its numbers mean what they did. BENCH_WORKER_CALLBACK_TASKS=0 skips the arm.
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { Redis } from 'ioredis';
import { QUEUES } from '@gmg/contracts';
import { AccountRepository, ApiKeyRepository, ChannelRepository, GroupRepository } from '@gmg/db';
import { diffHistograms, histogramQuantile, parseHistogram, shareAtMost, sumSamples, type HistogramBuckets } from '@gmg/observability';
import { DuePolls, createTaskQueue, queueKeyPrefix } from '@gmg/queue';
import { TEST_REDIS_URL, deleteRedisPrefix, startSimStack, waitFor } from '@gmg/testing';
import { insertRow } from './doc-table';
import { cpuSeconds, memMiB } from './proc-stats';
import { CALLBACK_SIGNING_KEY, prepareCallbackArms, runCallbackArms } from './worker-callbacks';

const TASKS = Math.max(1, Math.min(Number(process.env.BENCH_WORKER_TASKS ?? 2000), 20_000));
const SECONDS = Math.max(5, Math.min(Number(process.env.BENCH_WORKER_SECONDS ?? 60), 300));
const WARMUP_S = Math.max(0, Math.min(Number(process.env.BENCH_WORKER_WARMUP_S ?? 10), 120));
const POLL_SCALE = process.env.BENCH_WORKER_POLL_SCALE ?? String(5000 / 3500);
/** WORKER_CONCURRENCY of the worker under test (the service's default is 50). */
const WORKER_CONCURRENCY = process.env.BENCH_WORKER_CONCURRENCY ?? '50';
const SUBMIT_CONCURRENCY = 50;
/** QUEUE_SHARDS of the image pool (BENCH_WORKER_SHARDS; the issue's K = 2 run). */
const SHARDS = Math.max(1, Math.min(Number(process.env.BENCH_WORKER_SHARDS ?? 1), 16));
/** The channel's protocol (BENCH_WORKER_PROTOCOL: `gateway`, or a vendor protocol such as `fal`, issue 34). */
const PROTOCOL = process.env.BENCH_WORKER_PROTOCOL ?? 'gateway';
const BODY = JSON.stringify({ model: 'lumen-2-flex', prompt: 'bench worker capacity [sim:never]', resolution: '1MP' });
/** Finishing tasks per arm of the vendor-callbacks comparison (0: none). */
const CALLBACK_TASKS = Math.max(0, Math.min(Number(process.env.BENCH_WORKER_CALLBACK_TASKS ?? 100), 2000));

/** Calls per command name (INFO commandstats; commands run by a script are counted under their own names). */
async function commandStats(redis: Redis): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

/** One reading of the worker's /metrics: its upstream polls so far, and its gmg_poll_lateness_seconds (cumulative). */
async function workerReading(url: string): Promise<{ polls: number; lateness: HistogramBuckets }> {
  const text = await (await fetch(url)).text();
  return {
    polls: sumSamples(text, 'gmg_upstream_requests_total', { name: 'operation', value: 'poll' }) ?? 0,
    lateness: parseHistogram(text, 'gmg_poll_lateness_seconds'),
  };
}

const fmtMs = (s: number): string => `${(s * 1000).toFixed(0)} ms`;

function pgTransactions(dbName: string): number {
  const out = execFileSync(
    'psql',
    ['-h', '127.0.0.1', '-U', 'postgres', '-d', dbName, '-Atc', `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`],
    { encoding: 'utf8' },
  );
  return Number(out.trim());
}

async function main(): Promise<void> {
  const stack = await startSimStack({
    database: 'gmg_bench_wrk',
    logLevel: 'error',
    env: { QUEUE_SHARDS: `image=${SHARDS}`, UPSTREAM_CALLBACK_SIGNING_KEY: CALLBACK_SIGNING_KEY },
    // the main window's channel serves its own group only, and polls alone (callbacks off) whatever its protocol
    channel: { protocol: PROTOCOL, apiKey: PROTOCOL === 'gateway' ? undefined : 'bench-vendor-key', groups: ['bench-unlimited'] },
  });
  const { db, prefix, sim } = stack;
  const dbName = new URL(db.url).pathname.slice(1);
  const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  try {
    const accounts = new AccountRepository(db.dataSource);
    const acc = await accounts.create({ name: 'bench-worker' });
    await accounts.topup(acc.id, 10n ** 15n);
    await new GroupRepository(db.dataSource).upsert({ name: 'bench-unlimited', priceRatio: 1, models: null, rpsLimit: null, inflightLimit: null });
    const { secret } = await new ApiKeyRepository(db.dataSource).create({ accountId: acc.id, groupName: 'bench-unlimited' });
    const channels = new ChannelRepository(db.dataSource);
    const main = (await channels.list()).find((c) => c.name === 'sim')!;
    await channels.update(main.id, { settings: { callbacks: false } });
    const callbackKeys = CALLBACK_TASKS > 0 ? await prepareCallbackArms(db.dataSource, stack.simUrl) : undefined;

    // 1. submit N tasks through the edge, worker not running yet
    const edge = await stack.start('api-edge', { ADMIN_TOKEN: 'bench-admin-token-0123456789abcdef' });
    const ids: string[] = [];
    let next = 0;
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: SUBMIT_CONCURRENCY }, async () => {
        while (next < TASKS && Date.now() - t0 < 600_000) {
          next++;
          const r = await fetch(`${edge.url}/v1/images/generations`, {
            method: 'POST',
            headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
            body: BODY,
          });
          const j = (await r.json()) as { data?: Array<{ task_id: string }> };
          if (r.status !== 200 || !j.data?.[0]) throw new Error(`submit: ${r.status} ${JSON.stringify(j)}`);
          ids.push(j.data[0].task_id);
        }
      }),
    );
    if (ids.length !== TASKS) throw new Error(`submitted ${ids.length} of ${TASKS}`);
    console.log(`submitted ${TASKS} [sim:never] tasks through the edge in ${((Date.now() - t0) / 1000).toFixed(1)} s; edge stopped`);
    await edge.proc.stop();

    // 2. the worker takes them all upstream and settles into polling
    const worker = await stack.start(
      'worker-image',
      { WORKER_CONCURRENCY: WORKER_CONCURRENCY, POLL_INTERVAL_SCALE: POLL_SCALE, UPSTREAM_CALLBACK_BASE_URL: edge.url },
      // e.g. BENCH_WORKER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" (written when the bench stops the worker)
      process.env.BENCH_WORKER_NODE_ARGS?.split(' ').filter(Boolean) ?? [],
    );
    const pid = worker.proc.proc.pid ?? NaN;
    const shardList = Array.from({ length: SHARDS }, (_, i) => i);
    const queues = shardList.map((i) => createTaskQueue('image', redis, prefix, i));
    const polls = shardList.map((i) => new DuePolls(redis, queueKeyPrefix(prefix, QUEUES.image, i), 30_000));
    const onPollPath = async (): Promise<number> =>
      (
        await Promise.all(
          polls.map(async (p) => {
            const c = await p.counts();
            return c.waiting + c.claimed;
          }),
        )
      ).reduce((a, b) => a + b, 0);
    const jobCounts = async (): Promise<Record<string, number>> => {
      const all = await Promise.all(queues.map((q) => q.getJobCounts('waiting', 'delayed', 'active', 'completed', 'failed')));
      const out: Record<string, number> = {};
      for (const c of all) for (const [k, v] of Object.entries(c)) out[k] = (out[k] ?? 0) + v;
      return out;
    };
    const t1 = Date.now();
    // a worker that cannot keep up never gets there: after 120 s the bench measures that saturated state instead
    const settled = await waitFor(async () => (await onPollPath()) >= 0.95 * TASKS, {
      timeoutMs: 120_000,
      intervalMs: 250,
      what: '95 % on the poll path',
    }).then(
      () => true,
      () => false,
    );
    console.log(
      `${settled ? 'worker submitted them upstream' : 'NOT 95 % on the poll path (saturated)'} after ${((Date.now() - t1) / 1000).toFixed(1)} s (${await onPollPath()} polling, jobs ${JSON.stringify(await jobCounts())}); warm-up ${WARMUP_S} s, window ${SECONDS} s`,
    );
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, WARMUP_S * 1000);
      t.unref?.();
    });

    // 3. the window: lateness from the worker's own histogram, CPU, Redis commands by name, Postgres transactions
    const metricsUrl = `${worker.url}/metrics`;
    const reading0 = await workerReading(metricsUrl);
    const cpu0 = cpuSeconds(pid);
    const simPid = sim.proc.pid ?? NaN;
    const simCpu0 = cpuSeconds(simPid);
    const redis0 = await commandStats(redis);
    const pg0 = pgTransactions(dbName);
    const w0 = Date.now();
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, SECONDS * 1000);
      t.unref?.();
    });
    const window = (Date.now() - w0) / 1000;
    const redis1 = await commandStats(redis);
    const cpu = cpuSeconds(pid) - cpu0;
    const simCpu = cpuSeconds(simPid) - simCpu0;
    const reading1 = await workerReading(metricsUrl);
    const polled = reading1.polls - reading0.polls;
    const pgTx = pgTransactions(dbName) - pg0 - 1;
    const late = diffHistograms(reading1.lateness, reading0.lateness);
    const rss = memMiB(pid, 'VmRSS');
    const hwm = memMiB(pid, 'VmHWM');
    const counts = await jobCounts();
    await Promise.all(queues.map((q) => q.close()));

    const byCommand = Object.entries(redis1)
      .map(([k, v]) => [k, v - (redis0[k] ?? 0)] as const)
      .filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1]);
    // the two INFO calls of this bench are not the worker's
    const redisCmds = byCommand.reduce((a, [k, v]) => a + (k === 'info' ? 0 : v), 0);
    const pollsPerS = polled / window;
    const date = new Date().toISOString().slice(0, 16).replace('T', ' ');
    const machine = `${os.cpus().length}× ${os.cpus()[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
    const lateText = `p50 ${fmtMs(histogramQuantile(late, 0.5))}, p99 ${fmtMs(histogramQuantile(late, 0.99))}, ${(100 * shareAtMost(late, 1)).toFixed(2)} % within 1 s (${late.count} polls)`;
    const perPoll = `Redis ${(redisCmds / polled).toFixed(2)} commands (${byCommand
      .slice(0, 6)
      .map(([k, v]) => `${k} ${(v / polled).toFixed(2)}`)
      .join(', ')}), Postgres ${(pgTx / polled).toFixed(2)} transactions`;
    console.log(`\n${date} · ${machine}${process.env.BENCH_NOTE ? ` · ${process.env.BENCH_NOTE}` : ''}`);
    console.log(
      `worker-image on a \`${PROTOCOL}\` channel (concurrency ${WORKER_CONCURRENCY}, ${SHARDS} shard(s), POLL_INTERVAL_SCALE ${Number(POLL_SCALE).toFixed(3)}) tracking ${TASKS} tasks, ${window.toFixed(1)} s window`,
    );
    console.log(`polls: ${pollsPerS.toFixed(0)}/s upstream (due ${(TASKS / 5).toFixed(0)}/s: one per task every 5 s on average at scale 1.429)`);
    console.log(`lateness (claim − due, the worker's gmg_poll_lateness_seconds): ${lateText}`);
    console.log(
      `worker CPU ${cpu.toFixed(1)} s = ${((100 * cpu) / window).toFixed(0)} % of a core, ${((cpu * 1e3) / polled).toFixed(2)} ms per poll; RSS ${rss.toFixed(0)} MiB at the end, peak ${hwm.toFixed(0)} MiB`,
    );
    console.log(
      `upstream simulator CPU ${simCpu.toFixed(1)} s = ${((100 * simCpu) / window).toFixed(0)} % of a core, ${((simCpu * 1e3) / polled).toFixed(2)} ms per poll`,
    );
    console.log(`per poll: ${perPoll}; jobs at the end: ${JSON.stringify(counts)}`);
    insertRow(
      '| date (UTC) | change | machine | tasks |',
      `| ${date} | ${process.env.BENCH_NOTE ?? '—'}${PROTOCOL === 'gateway' ? '' : ` (\`${PROTOCOL}\` channel)`} | ${machine} | ${TASKS} @ scale ${Number(POLL_SCALE).toFixed(3)}, ${SHARDS} shard(s), ${window.toFixed(0)} s | ${pollsPerS.toFixed(0)}/s (due ${(TASKS / 5).toFixed(0)}/s) | ${lateText} | ${((100 * cpu) / window).toFixed(0)} % of a core, ${((cpu * 1e3) / polled).toFixed(2)} ms/poll | ${rss.toFixed(0)} MiB (peak ${hwm.toFixed(0)}) | ${perPoll} |`,
    );

    // 4. vendor callbacks on and off under the same load (the edge back up: it receives the callbacks)
    if (callbackKeys) {
      const edgeAgain = await stack.restart(edge);
      const t2 = Date.now();
      const r = await runCallbackArms({ ds: db.dataSource, edgeUrl: edgeAgain.url, workerUrl: worker.url, keys: callbackKeys, tasks: CALLBACK_TASKS });
      const ratio = r.on.pollsPerTask / r.off.pollsPerTask;
      const arm = (a: typeof r.on) => `${a.pollsPerTask.toFixed(2)} (${a.polls} polls, ${a.completed} completed, ${a.failed} failed)`;
      console.log(
        `\nvendor callbacks (fal, ${CALLBACK_TASKS} [sim:slow] images per arm at once, ${((Date.now() - t2) / 1000).toFixed(0)} s, beside ${TASKS} polling tasks): upstream polls per completed task — callbacks off ${arm(r.off)}, on ${arm(r.on)}; ratio ${ratio.toFixed(2)} (target ≤ 0.5)`,
      );
      insertRow(
        '| date (UTC) | change | machine | load | polls per completed task, callbacks off |',
        `| ${date} | ${process.env.BENCH_NOTE ?? '—'} | ${machine} | ${CALLBACK_TASKS} fal images per arm beside ${TASKS} polling tasks, scale ${Number(POLL_SCALE).toFixed(3)} | ${arm(r.off)} | ${arm(r.on)} | ${ratio.toFixed(2)} |`,
      );
    }
  } finally {
    await stack.stop();
    await deleteRedisPrefix(redis, prefix);
    redis.disconnect();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
