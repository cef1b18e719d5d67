/**
 * Large bodies (issue 11 item 2): LARGE_SUBMITS submits of ~10 MB bodies (lumen-2-pro with 8 inline Base64 PNG
 * references) from one key, against the real processes (api-edge, worker-image, billing, upstream-sim; Postgres;
 * Redis). Samples every process's resident memory (VmRSS, and the kernel's peak VmHWM) while the submits run and the
 * tasks drain, and fails unless every worker stays under LARGE_RSS_LIMIT_MIB. Loopback only; every loop is bounded.
 *
 *   npm run bench -- large-bodies
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { AccountRepository, ApiKeyRepository } from '@gmg/db';
import { startSimStack, waitFor } from '@gmg/testing';
import { treeMemMiB } from './proc-stats';

const SUBMITS = Math.min(Number(process.env.LARGE_SUBMITS ?? 60), 500);
const CONCURRENCY = Math.min(Number(process.env.LARGE_CONCURRENCY ?? 4), 32);
const RSS_LIMIT_MIB = Number(process.env.LARGE_RSS_LIMIT_MIB ?? 300);
/** Inline images per body (~1.2 MiB of Base64 each): 8 makes the ~10 MB body; fewer, more bodies within the edge's budget. */
const IMAGES = Math.min(Math.max(1, Number(process.env.LARGE_IMAGES ?? 8)), 16);
const MAX_SECONDS = 600;

/** One body of IMAGES incompressible PNGs of 560×560 (~1.25 MB of Base64 each; 8 make ~10 MB). */
async function largeBody(): Promise<string> {
  const side = 560;
  const images = await Promise.all(
    Array.from({ length: IMAGES }, () =>
      sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } })
        .png({ compressionLevel: 0 })
        .toBuffer(),
    ),
  );
  return JSON.stringify({ model: 'lumen-2-pro', prompt: 'large body', image_urls: images.map((b) => b.toString('base64')) });
}

async function main(): Promise<void> {
  const stack = await startSimStack({ database: 'gmg_large', timeScale: '0.05', logLevel: 'error' });
  const { db, procs } = stack;
  const uploadDir = mkdtempSync(path.join(os.tmpdir(), 'gmg-large-uploads-'));
  try {
    const [edge, worker, billing] = await Promise.all([
      stack.start('api-edge', (url) => ({ ADMIN_TOKEN: 'bench-admin-token-0123456789abcdef', UPLOAD_DIR: uploadDir, PUBLIC_BASE_URL: url })),
      stack.start('worker-image', { POLL_INTERVAL_SCALE: '0.1' }),
      stack.start('billing'),
    ]);
    const named = { 'api-edge': edge.proc, 'worker-image': worker.proc, billing: billing.proc, 'upstream-sim': stack.sim };
    const accounts = new AccountRepository(db.dataSource);
    const acc = await accounts.create({ name: 'large-bodies' });
    await accounts.topup(acc.id, 10n ** 15n);
    const key = (await new ApiKeyRepository(db.dataSource).create({ accountId: acc.id })).secret;
    const base = edge.url;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const body = await largeBody();

    const before = Object.fromEntries(Object.entries(named).map(([n, s]) => [n, treeMemMiB(s.proc.pid, 'VmRSS')]));
    const peak: Record<string, number> = { ...before };
    const sampler = setInterval(() => {
      for (const [n, s] of Object.entries(named)) peak[n] = Math.max(peak[n], treeMemMiB(s.proc.pid, 'VmRSS'));
    }, 50);

    const statuses: Record<number, number> = {};
    const ids: string[] = [];
    let next = 0;
    const deadline = Date.now() + MAX_SECONDS * 1000;
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < SUBMITS && Date.now() < deadline) {
          next++;
          // a 429 (rate limit) or a 503 (the edge's body budget, MAX_BODY_BYTES_IN_FLIGHT) is retried after its
          // Retry-After, at most 20 times per submit
          for (let attempt = 0; attempt < 20; attempt++) {
            const r = await fetch(`${base}/v1/images/generations`, { method: 'POST', headers, body });
            const j = (await r.json()) as { data?: Array<{ task_id: string }> };
            statuses[r.status] = (statuses[r.status] ?? 0) + 1;
            if (r.status === 200 && j.data?.[0]) ids.push(j.data[0].task_id);
            if (r.status !== 429 && r.status !== 503) break;
            await new Promise((res) => setTimeout(res, 1000 * Number(r.headers.get('retry-after') ?? 1)));
          }
        }
      }),
    );
    const submitSeconds = (Date.now() - t0) / 1000;
    await waitFor(
      async () => {
        const [{ n }] = await db.dataSource.query<Array<{ n: number }>>(`SELECT count(*)::int AS n FROM tasks WHERE status IN ('pending','processing')`);
        return n === 0;
      },
      { timeoutMs: MAX_SECONDS * 1000, intervalMs: 250, what: 'all tasks finished' },
    );
    clearInterval(sampler);
    const [row] = await db.dataSource.query<Array<{ request_max: number; summary_max: number; completed: number }>>(
      `SELECT max(pg_column_size(request))::int AS request_max, max(pg_column_size(summary))::int AS summary_max,
              count(*) FILTER (WHERE status = 'completed')::int AS completed FROM tasks`,
    );

    const report = {
      submits: SUBMITS,
      concurrency: CONCURRENCY,
      bodyMiB: +(body.length / 2 ** 20).toFixed(2),
      statuses,
      accepted: ids.length,
      completed: row.completed,
      submitSeconds: +submitSeconds.toFixed(1),
      taskRowBytes: { requestMax: row.request_max, summaryMax: row.summary_max },
      rssMiB: Object.fromEntries(
        Object.keys(named).map((n) => [
          n,
          {
            before: +before[n].toFixed(0),
            peakSampled: +peak[n].toFixed(0),
            peakKernel: +treeMemMiB(named[n as keyof typeof named].proc.pid, 'VmHWM').toFixed(0),
          },
        ]),
      ),
      limitMiB: RSS_LIMIT_MIB,
    };
    console.log(JSON.stringify(report, null, 2));
    const workerPeak = treeMemMiB(named['worker-image'].proc.pid, 'VmHWM');
    if (!(workerPeak < RSS_LIMIT_MIB) || ids.length !== SUBMITS) process.exitCode = 1;
  } catch (e) {
    // a service that died under the load (out of memory, say) is named with the end of its output
    await Promise.all(
      procs.map(async (p) => {
        const alive = await waitFor(() => p.proc.exitCode !== null || p.proc.signalCode !== null, { timeoutMs: 2000, intervalMs: 50 }).then(
          () => false,
          () => true,
        );
        if (!alive)
          console.error(`${p.name} exited under the load (code ${p.proc.exitCode}, signal ${p.proc.signalCode}); its last output:\n${p.output().slice(-3000)}`);
      }),
    );
    throw e;
  } finally {
    await stack.stop();
    rmSync(uploadDir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
