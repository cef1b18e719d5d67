/**
 * `npm run bench -- billing`: settlements per second of one billing process (services/billing as a real process)
 * working off a backlog of N terminal, unsettled tasks (issue 13 item 4; target ≥ 2,000/s).
 *
 * The backlog is built with billing NOT running, through the real repositories: TaskRepository.createWithHold
 * (the hold), then complete (¾, a quarter of those with a partial capture so the remainder release runs too) or
 * fail (¼), in parallel batches, spread over BENCH_BILLING_ACCOUNTS accounts. Then one settlement job per task is
 * enqueued exactly as the worker does it (enqueueSettlement from @gmg/queue, jobId settle-<taskId>): that is the
 * production path of a settlement, while the sweep is the crash-recovery path (sequential, every 15 s, only for
 * tasks unsettled for 30 s) and would measure the recovery cadence, not billing's throughput. The queue is paused
 * while billing starts (its start-up under tsx is neither timed nor in the CPU figure) and resumed once it is
 * healthy; the rate is measured from the first settled task to the last, by polling the unsettled backlog
 * (OpsStatsRepository.unsettled, the figure billing exports as a metric; an index read) every 20 ms. Billing's CPU (utime + stime from
 * /proc over that window) and peak RSS (VmHWM) are reported. At the end: no task unsettled, and the ledger says
 * every task was settled exactly once (captures + releases = holds, UNIQUE(task_id, kind) forbids a second entry),
 * and every account holds nothing and has available = topup − spent.
 *
 *   npm run bench -- billing                                   # 20,000 tasks, 100 accounts, SETTLE_CONCURRENCY 20
 *   BENCH_BILLING_TASKS=5000 BENCH_BILLING_ACCOUNTS=1 SETTLE_CONCURRENCY=50 npm run bench -- billing
 *   BENCH_NOTE='…' labels the row.
 */
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import type { NormalizedRequest } from '@gmg/contracts';
import { AccountRepository, ApiKeyRepository, OpsStatsRepository, TaskRepository, loadPrices, newTaskId } from '@gmg/db';
import { createBillingQueue, enqueueSettlement } from '@gmg/queue';
import {
  REPO_ROOT,
  TEST_REDIS_URL,
  createTestDatabase,
  deleteRedisPrefix,
  freePort,
  startService,
  uniqueRedisPrefix,
  waitFor,
  type ServiceProcess,
} from '@gmg/testing';
import { insertRow } from './doc-table';
import { cpuSeconds, memMiB } from './proc-stats';

const TASKS = Math.max(1, Math.min(Number(process.env.BENCH_BILLING_TASKS ?? 20_000), 200_000));
const ACCOUNTS = Math.max(1, Math.min(Number(process.env.BENCH_BILLING_ACCOUNTS ?? 100), 1000));
const CONCURRENCY = process.env.SETTLE_CONCURRENCY ?? '20';
const BATCH = 200;
const PRICE = 1000n;
const request = { model: 'lumen-2-flex' } as unknown as NormalizedRequest;

async function inBatches(n: number, fn: (i: number) => Promise<void>): Promise<void> {
  for (let start = 0; start < n; start += BATCH) {
    await Promise.all(Array.from({ length: Math.min(BATCH, n - start) }, (_, k) => fn(start + k)));
  }
}

async function main(): Promise<void> {
  const db = await createTestDatabase('gmg_bench_bill');
  const prefix = uniqueRedisPrefix();
  const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  let billing: ServiceProcess | undefined;
  try {
    await loadPrices(db.dataSource, path.join(REPO_ROOT, 'infra/prices.json'));
    const accounts = new AccountRepository(db.dataSource);
    const keys = new ApiKeyRepository(db.dataSource);
    const tasks = new TaskRepository(db.dataSource);
    const stats = new OpsStatsRepository(db.dataSource);
    const topup = PRICE * BigInt(TASKS) * 2n;
    const owners: Array<{ accountId: string; apiKeyId: string }> = [];
    for (let a = 0; a < ACCOUNTS; a++) {
      const acc = await accounts.create({ name: `bench-billing-${a}` });
      await accounts.topup(acc.id, topup);
      owners.push({ accountId: acc.id, apiKeyId: (await keys.create({ accountId: acc.id })).key.id });
    }

    const t0 = Date.now();
    const ids: string[] = new Array<string>(TASKS);
    await inBatches(TASKS, async (i) => {
      const o = owners[i % ACCOUNTS];
      const id = newTaskId();
      ids[i] = id;
      await tasks.createWithHold({
        id,
        ...o,
        model: 'lumen-2-flex',
        requestedModel: 'lumen-2-flex',
        pool: 'image',
        request,
        price: PRICE,
        priceSnapshot: {},
        deadlineAt: new Date(Date.now() + 3600_000),
      });
      const done =
        i % 4 === 3
          ? await tasks.fail(id, { code: 'task_failed', message: 'bench' })
          : await tasks.complete(id, { images: [] }, i % 4 === 2 ? { captureAmount: PRICE / 2n } : {});
      if (!done) throw new Error(`task ${id} did not reach a terminal state`);
    });
    const built = (Date.now() - t0) / 1000;
    const queue = createBillingQueue(redis, prefix);
    const t1 = Date.now();
    await inBatches(TASKS, async (i) => void (await enqueueSettlement(queue, ids[i])));
    const enqueued = (Date.now() - t1) / 1000;
    // paused until billing is up: its start-up (tsx, module loading) is neither in the window nor in the CPU
    await queue.pause();
    const before = await stats.money();
    if (before.unsettled !== TASKS) throw new Error(`backlog is ${before.unsettled}, expected ${TASKS}`);
    console.log(
      `backlog: ${TASKS} terminal unsettled tasks over ${ACCOUNTS} accounts built in ${built.toFixed(1)} s, ${TASKS} settle jobs enqueued in ${enqueued.toFixed(1)} s`,
    );

    const port = await freePort();
    billing = await startService(
      'billing',
      {
        DATABASE_URL: db.url,
        REDIS_URL: TEST_REDIS_URL,
        QUEUE_PREFIX: prefix,
        LOG_LEVEL: 'warn',
        HEALTH_PORT: String(port),
        SETTLE_CONCURRENCY: CONCURRENCY,
      },
      `http://127.0.0.1:${port}/readyz`,
    );
    const pid = billing.proc.pid ?? NaN;
    const cpu0 = cpuSeconds(pid);
    await queue.resume();
    await queue.close();

    let first = 0;
    let last = 0;
    let unsettled = TASKS;
    // The backlog alone (an index read), not money(): its ledger totals scan every ledger row, and 50 of them a
    // second took Postgres CPU from the settlements being measured (until 2026-11-24).
    await waitFor(
      async () => {
        const m = await stats.unsettled();
        const now = performance.now();
        if (m.count < unsettled) {
          if (!first) first = now;
          last = now;
          unsettled = m.count;
        }
        return m.count === 0;
      },
      { timeoutMs: 600_000, intervalMs: 20, what: 'every task settled' },
    );
    const cpu = cpuSeconds(pid) - cpu0;
    const rss = memMiB(pid, 'VmHWM');
    // the first poll that saw a settlement stands for "the first settled": the window is at most one poll short
    const seconds = Math.max((last - first) / 1000, 0.001);
    const rate = TASKS / seconds;

    // exactly once and the account invariant
    const after = await stats.money();
    const k = (kind: string) => after.ledgerMinor[kind] ?? 0n;
    const problems: string[] = [];
    const holds = k('hold');
    const capturePlusRelease = k('capture') + k('release');
    if (holds !== PRICE * BigInt(TASKS)) problems.push(`holds ${holds} ≠ ${PRICE * BigInt(TASKS)}`);
    if (capturePlusRelease !== holds) problems.push(`captures + releases ${capturePlusRelease} ≠ holds ${holds}`);
    const expectedCapture = BigInt(ids.filter((_, i) => i % 4 !== 3).length) * PRICE - BigInt(ids.filter((_, i) => i % 4 === 2).length) * (PRICE / 2n);
    if (k('capture') !== expectedCapture) problems.push(`captures ${k('capture')} ≠ ${expectedCapture}`);
    let spent = 0n;
    for (const o of owners) {
      const acc = await accounts.get(o.accountId);
      if (!acc) {
        problems.push(`account ${o.accountId} missing`);
        continue;
      }
      if (acc.held !== 0n) problems.push(`account ${acc.id} still holds ${acc.held}`);
      if (acc.available + acc.spent !== topup) problems.push(`account ${acc.id}: available ${acc.available} + spent ${acc.spent} ≠ topup ${topup}`);
      spent += acc.spent;
    }
    if (spent !== expectedCapture) problems.push(`spent ${spent} ≠ captures ${expectedCapture}`);

    const date = new Date().toISOString().slice(0, 16).replace('T', ' ');
    const machine = `${os.cpus().length}× ${os.cpus()[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
    const cpuMsPer = (cpu * 1000) / TASKS;
    console.log(`\n${date} · ${machine}${process.env.BENCH_NOTE ? ` · ${process.env.BENCH_NOTE}` : ''}`);
    console.log(
      `billing settled ${TASKS} tasks (${ACCOUNTS} accounts, SETTLE_CONCURRENCY ${CONCURRENCY}) in ${seconds.toFixed(2)} s: ${rate.toFixed(0)} settlements/s`,
    );
    console.log(
      `billing CPU ${cpu.toFixed(2)} s (${((100 * cpu) / seconds).toFixed(0)} % of a core, ${cpuMsPer.toFixed(2)} ms per settlement), peak RSS ${rss.toFixed(0)} MiB`,
    );
    console.log(`exactly once + account invariant: ${problems.length ? `FAILED\n  ${problems.slice(0, 20).join('\n  ')}` : 'ok'}`);
    insertRow(
      '| date (UTC) | change | machine | backlog |',
      `| ${date} | ${process.env.BENCH_NOTE ?? '—'} | ${machine} | ${TASKS} tasks, ${ACCOUNTS} accounts, concurrency ${CONCURRENCY} | **${rate.toFixed(0)}/s** (${seconds.toFixed(2)} s) | ${cpu.toFixed(2)} s, ${((100 * cpu) / seconds).toFixed(0)} % of a core, ${cpuMsPer.toFixed(2)} ms/settlement | ${rss.toFixed(0)} MiB | ${problems.length ? 'FAILED' : 'ok'} |`,
    );
    if (problems.length) process.exitCode = 1;
  } finally {
    await billing?.stop();
    await deleteRedisPrefix(redis, prefix);
    redis.disconnect();
    await db.drop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
