/**
 * `npm run bench -- messages`: the messages pass-through against a minimal local mock upstream
 * (bench/messages-mock.upstream.ts), direct-to-mock and through api-edge (a real process, billing on: a real
 * Postgres database, the hold before the relay and the settlement after it) in the same run, with the same client
 * (an undici keep-alive pool); and the chat-completions path (POST /v1/chat/completions: the same call, translated
 * both ways) beside /v1/messages at one connection, the two interleaved call by call so that drift hits both alike;
 * and /v1/chat/completions through an `openai` channel (passed through, no translation) beside /v1/messages through
 * a `messages` channel, interleaved the same way (printed, not yet a table of docs/benchmarks.md).
 * Loopback only; every loop bounded in count and time. Appends a row to each of its two tables in
 * docs/benchmarks.md.
 *
 *   npm run bench -- messages
 *   BENCH_MSG_REQUESTS=3000 BENCH_MSG_STREAMS=1000 npm run bench -- messages
 *   BENCH_BASELINE=/tmp/base npm run bench -- messages
 *
 * BENCH_BASELINE: a built checkout of another revision (`node scripts/build.mjs` there): its edge runs beside this
 * one on the same database, mock and Redis, and the one-connection calls alternate between the two, so the rows
 * compare this revision with that one in one run (issue 36: the targets "beside the previous main"). Postgres CPU per
 * call (every postgres process's CPU time over the 16-connection phase ÷ its calls) is printed for each edge.
 *
 * Each edge reaches Postgres through a counting relay of its own (bench/pg-wire-counter.ts), so the run also prints,
 * per edge and per call: statements and round trips (at 1 and 16 connections; `statementsPerCall` lists them by
 * statement), and the CPU of the Postgres backends serving that edge alone — counts that the other processes of a
 * shared machine do not move, unlike the latencies and the all-postgres CPU.
 *
 * `serverTiming`: the medians of the `Server-Timing` header of the one-connection calls (docs/messages.md): the edge's own
 * account of its time before the upstream call (`gw`), the upstream's (`upstream`: request sent to whole answer read)
 * and its total to the answer's headers — what the client's latency has beyond it is the HTTP hops and the writes.
 *
 * BENCH_CPU_PROF=<dir>: the edge's V8 CPU profile, written when the bench stops it (bench/profile-summary.ts reads it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { insertRow } from './doc-table';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { AccountRepository, ApiKeyRepository, ChannelRepository, loadPrices } from '@gmg/db';
import { REPO_ROOT, TEST_REDIS_URL, createTestDatabase, freePort, startService, uniqueRedisPrefix, waitFor, type ServiceProcess } from '@gmg/testing';
import { startNode, stop } from './bench-process';
import { pct, postgresCpuSeconds, treeMemMiB } from './proc-stats';
import { pgWireCounter, type PgWireCounter } from './pg-wire-counter';

/** The bench measures the gateway's capacity, not the fair-use defaults of the `default` group (docs/rate-limits.md). */
const BENCH_KEY_LIMITS = { rpsLimit: 1_000_000, inflightLimit: 1_000_000 };

const REQUESTS = Math.min(Number(process.env.BENCH_MSG_REQUESTS ?? 2000), 50_000);
const STREAMS = Math.min(Number(process.env.BENCH_MSG_STREAMS ?? 1000), 5000);
const MAX_SECONDS = 300;
const BASELINE = process.env.BENCH_BASELINE ? path.resolve(process.env.BENCH_BASELINE) : undefined;
const BODY = JSON.stringify({ model: 'lumen-chat-1-mini', max_tokens: 64, messages: [{ role: 'user', content: 'Hello, benchmark' }] });
const STREAM_BODY = BODY.replace('"max_tokens":64', '"max_tokens":64,"stream":true');
/** The same conversation in the chat-completions protocol (docs/chat.md): the same upstream body once translated. */
const CHAT_PATH = '/v1/chat/completions';
const CHAT_BODY = JSON.stringify({ model: 'lumen-chat-1-mini', max_tokens: 64, messages: [{ role: 'user', content: 'Hello, benchmark' }] });
const CHAT_STREAM_BODY = CHAT_BODY.replace('"max_tokens":64', '"max_tokens":64,"stream":true');
/** The model an `openai` channel on the mock serves (listed by name): the chat-completions pass-through. */
const OPENAI_BODY = CHAT_BODY.replace('lumen-chat-1-mini', 'lumen-chat-1');
const OPENAI_STREAM_BODY = CHAT_STREAM_BODY.replace('lumen-chat-1-mini', 'lumen-chat-1');

const f2 = (n: number) => n.toFixed(2);
const signed = (n: number) => `${n < 0 ? '−' : '+'}${f2(Math.abs(n))}`;

interface Target {
  pool: Pool;
  headers: Record<string, string>;
}

/**
 * One call; resolves with [time to first body byte, total] in ms. `timings`: where to keep the answer's
 * `Server-Timing` header (the gateway's own account of its time).
 */
async function call(t: Target, body: string, extra: Record<string, string> = {}, urlPath = '/v1/messages', timings?: string[]): Promise<[number, number]> {
  const s = performance.now();
  const res = await t.pool.request({ method: 'POST', path: urlPath, headers: { ...t.headers, ...extra }, body });
  const st = res.headers['server-timing'];
  if (timings && typeof st === 'string') timings.push(st);
  let first = NaN;
  for await (const _chunk of res.body) if (Number.isNaN(first)) first = performance.now() - s;
  if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
  return [first, performance.now() - s];
}

/** `total` calls with `concurrency` in flight: latencies (sorted) and calls per second. */
async function load(total: number, concurrency: number, fn: () => Promise<[number, number]>, pick: 0 | 1 = 1) {
  const lat: number[] = [];
  let next = 0;
  let failures = 0;
  const deadline = Date.now() + MAX_SECONDS * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total && Date.now() < deadline) {
        next++;
        try {
          lat.push((await fn())[pick]);
        } catch {
          failures++;
        }
      }
    }),
  );
  return { lat: lat.sort((a, b) => a - b), rps: lat.length / ((performance.now() - t0) / 1000), failures };
}

/**
 * `total` rounds of one call each of `a` and `b` in turn (which goes first alternates), one connection each: the
 * latencies of each (sorted) measured under the same conditions, for a difference that is the paths' own.
 */
async function interleaved(total: number, a: () => Promise<[number, number]>, b: () => Promise<[number, number]>, pick: 0 | 1 = 1) {
  const la: number[] = [];
  const lb: number[] = [];
  let failures = 0;
  const deadline = Date.now() + MAX_SECONDS * 1000;
  for (let i = 0; i < total && Date.now() < deadline; i++) {
    for (const [fn, into] of i % 2 === 0
      ? ([
          [a, la],
          [b, lb],
        ] as const)
      : ([
          [b, lb],
          [a, la],
        ] as const)) {
      try {
        into.push((await fn())[pick]);
      } catch {
        failures++;
      }
    }
  }
  return { a: la.sort((x, y) => x - y), b: lb.sort((x, y) => x - y), failures };
}

/** Where the edge's resident memory is (its /metrics, prom-client's V8 heap gauges): committed vs used, in MiB. */
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

async function heapOf(edgeUrl: string): Promise<string> {
  const text = await (await fetch(`${edgeUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
  const g = (re: RegExp): number => Number(re.exec(text)?.[1] ?? NaN) / 2 ** 20;
  const space = (kind: 'total' | 'used', sp: string) => g(new RegExp(`^nodejs_heap_space_size_${kind}_bytes\\{space="${sp}"[^}]*\\} (\\S+)$`, 'm'));
  return (
    `heap ${g(/^nodejs_heap_size_total_bytes\{[^}]*\} (\S+)$/m).toFixed(0)} committed / ${g(/^nodejs_heap_size_used_bytes\{[^}]*\} (\S+)$/m).toFixed(0)} used ` +
    `(new ${space('total', 'new').toFixed(0)}, old ${space('total', 'old').toFixed(0)} / ${space('used', 'old').toFixed(0)} used), external ${g(/^nodejs_external_memory_bytes\{[^}]*\} (\S+)$/m).toFixed(0)} MiB`
  );
}

/**
 * `phase` through one edge's counting relay: its Postgres statements, round trips and backends' CPU per call
 * (over the calls the phase made; the edge's own background statements of the phase included).
 */
async function counted<R extends { lat: number[] }>(
  w: PgWireCounter,
  phase: () => Promise<R>,
): Promise<{ r: R; perCall: string; byStatement: Record<string, number> }> {
  const c0 = w.counts();
  const cpu0 = await w.backendCpuSeconds();
  const r = await phase();
  const c1 = w.counts();
  const cpuUs = ((await w.backendCpuSeconds()) - cpu0) * 1e6;
  const n = Math.max(1, r.lat.length);
  const each = [...c1.byStatement]
    .map(([sql, k]) => [sql, (k - (c0.byStatement.get(sql) ?? 0)) / n] as const)
    .filter(([, k]) => k > 0)
    .sort((a, b) => b[1] - a[1]);
  return {
    r,
    perCall: `${((c1.statements - c0.statements) / n).toFixed(2)} statements, ${((c1.roundTrips - c0.roundTrips) / n).toFixed(2)} round trips, own backends ${(cpuUs / n).toFixed(0)} µs per call`,
    byStatement: Object.fromEntries(each.slice(0, 8).map(([sql, k]) => [sql, Number(k.toFixed(3))])),
  };
}

/** The medians of each metric of the `Server-Timing` headers kept (`gw`, `upstream`, `total`), in ms. */
function serverTimingMedians(headers: readonly string[]): string {
  const by = new Map<string, number[]>();
  for (const h of headers) {
    for (const m of h.matchAll(/(\w+);dur=([\d.]+)/g)) {
      const [, name, dur] = m;
      if (name !== undefined && dur !== undefined) by.set(name, [...(by.get(name) ?? []), Number(dur)]);
    }
  }
  return (
    [...by]
      .map(
        ([name, v]) =>
          `${name} p50 ${f2(
            pct(
              v.sort((a, b) => a - b),
              50,
            ),
          )}`,
      )
      .join(', ') + " ms (the edge's own account)"
  );
}

async function startMock(port: number): Promise<ChildProcess> {
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'bench/messages-mock.upstream.ts')], {
    env: { ...process.env, MOCK_PORT: String(port) },
    stdio: 'ignore',
  });
  process.once('exit', () => proc.kill('SIGKILL'));
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok, { timeoutMs: 30_000, what: 'mock upstream' });
  return proc;
}

async function main(): Promise<void> {
  const db = await createTestDatabase('gmg_bench_msg');
  let edge: ServiceProcess | undefined;
  let baseEdge: ChildProcess | undefined;
  let mock: ChildProcess | undefined;
  const pools: Pool[] = [];
  const wires: PgWireCounter[] = [];
  try {
    await loadPrices(db.dataSource, path.join(REPO_ROOT, 'infra/prices.json'));
    // each edge reaches Postgres through its own counting relay: its statements and round trips per call, and the
    // CPU of the backends serving it alone (bench/pg-wire-counter.ts)
    const pidOfPort = async (ports: number[]) =>
      new Map(
        (
          await db.dataSource.query<Array<{ port: number; pid: number }>>(`SELECT client_port AS port, pid FROM pg_stat_activity WHERE client_port = ANY($1)`, [
            ports,
          ])
        ).map((r) => [r.port, r.pid]),
      );
    wires.push(await pgWireCounter(db.url, pidOfPort), await pgWireCounter(db.url, pidOfPort));
    const [wire, baseWire] = wires;
    const [mockPort, edgePort] = await Promise.all([freePort(), freePort()]);
    mock = await startMock(mockPort);
    const mockUrl = `http://127.0.0.1:${mockPort}`;
    await new ChannelRepository(db.dataSource).create({ name: 'mock', protocol: 'messages', baseUrl: mockUrl, apiKey: 'mock-key' });
    await new ChannelRepository(db.dataSource).create({
      name: 'mock-openai',
      protocol: 'openai',
      baseUrl: mockUrl,
      apiKey: 'mock-key',
      models: ['lumen-chat-1'],
      priority: 10,
    });
    edge = await startService(
      'api-edge',
      {
        DATABASE_URL: wire.url,
        REDIS_URL: TEST_REDIS_URL,
        QUEUE_PREFIX: uniqueRedisPrefix(),
        LOG_LEVEL: 'error',
        PORT: String(edgePort),
        ADMIN_TOKEN,
      },
      `http://127.0.0.1:${edgePort}/healthz`,
      // BENCH_CPU_PROF=<dir>: the edge's CPU profile (written when the bench stops it; bench/profile-summary.ts reads it)
      60_000,
      undefined,
      process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [],
    );
    const basePort = BASELINE ? await freePort() : 0;
    if (BASELINE) {
      baseEdge = await startNode(
        'services/api-edge/src/main.ts',
        basePort,
        { DATABASE_URL: baseWire.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: uniqueRedisPrefix(), LOG_LEVEL: 'error', ADMIN_TOKEN },
        [],
        BASELINE,
      );
    }
    const accounts = new AccountRepository(db.dataSource);
    const acc = await accounts.create({ name: 'bench-messages' });
    await accounts.topup(acc.id, 10n ** 15n);
    const key = (await new ApiKeyRepository(db.dataSource).create({ accountId: acc.id, ...BENCH_KEY_LIMITS })).secret;
    const common = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' };
    const target = (url: string, headers: Record<string, string>, connections: number): Target => {
      const pool = new Pool(url, { connections, keepAliveTimeout: 60_000, headersTimeout: 120_000, bodyTimeout: 120_000 });
      pools.push(pool);
      return { pool, headers: { ...common, ...headers } };
    };
    const direct1 = target(mockUrl, { 'x-api-key': 'mock-key' }, 1);
    const gw1 = target(`http://127.0.0.1:${edgePort}`, { 'x-api-key': key }, 1);
    // the chat-completions clients' own header; a pool of its own, so neither path waits on the other's connection
    const chat1 = target(`http://127.0.0.1:${edgePort}`, { authorization: `Bearer ${key}` }, 1);

    const base1 = BASELINE ? target(`http://127.0.0.1:${basePort}`, { 'x-api-key': key }, 1) : undefined;

    // warm-up: JIT, connection pools, caches (price table, channels, key)
    await load(300, 1, () => call(direct1, BODY));
    await load(300, 1, () => call(gw1, BODY));
    if (base1) await load(300, 1, () => call(base1, BODY));
    await load(300, 1, () => call(chat1, CHAT_BODY, {}, CHAT_PATH));

    // the floor: the edge's HTTP stack alone (GET /healthz: Express, request id, logger; no auth, no work)
    const floor = await load(REQUESTS, 1, async () => {
      const s = performance.now();
      const r = await gw1.pool.request({ method: 'GET', path: '/healthz' });
      await r.body.arrayBuffer();
      return [NaN, performance.now() - s];
    });
    const latD = await load(REQUESTS, 1, () => call(direct1, BODY));
    const timings: string[] = [];
    const w1 = await counted(wire, () => load(REQUESTS, 1, () => call(gw1, BODY, {}, '/v1/messages', timings)));
    const latG = w1.r;
    const ttfbD = await load(Math.floor(REQUESTS / 2), 1, () => call(direct1, STREAM_BODY), 0);
    const ttfbG = await load(Math.floor(REQUESTS / 2), 1, () => call(gw1, STREAM_BODY), 0);
    // the chat-completions path beside /v1/messages: whole answers (total), and streams (first byte)
    const vsChat = await interleaved(
      REQUESTS,
      () => call(gw1, BODY),
      () => call(chat1, CHAT_BODY, {}, CHAT_PATH),
    );
    const vsChatTtfb = await interleaved(
      Math.floor(REQUESTS / 2),
      () => call(gw1, STREAM_BODY),
      () => call(chat1, CHAT_STREAM_BODY, {}, CHAT_PATH),
      0,
    );
    // the chat-completions pass-through of an openai channel beside the messages pass-through (issue 36's target: within 0.1 ms p50)
    await load(300, 1, () => call(chat1, OPENAI_BODY, {}, CHAT_PATH));
    const vsOpenAi = await interleaved(
      REQUESTS,
      () => call(gw1, BODY),
      () => call(chat1, OPENAI_BODY, {}, CHAT_PATH),
    );
    const vsOpenAiTtfb = await interleaved(
      Math.floor(REQUESTS / 2),
      () => call(gw1, STREAM_BODY),
      () => call(chat1, OPENAI_STREAM_BODY, {}, CHAT_PATH),
      0,
    );
    // this revision beside the baseline, call by call at one connection: whole answers, then streams' first byte
    // (the baseline's statements per call at one connection: counted over its half of these calls)
    const vsBaseCounted = base1
      ? await counted(baseWire, async () => {
          const r = await interleaved(
            REQUESTS,
            () => call(gw1, BODY),
            () => call(base1, BODY),
          );
          return { ...r, lat: r.b };
        })
      : undefined;
    const vsBase = vsBaseCounted?.r;
    const vsBaseTtfb = base1
      ? await interleaved(
          Math.floor(REQUESTS / 2),
          () => call(gw1, STREAM_BODY),
          () => call(base1, STREAM_BODY),
          0,
        )
      : undefined;
    /** Statements per call by statement at 16 connections: this edge's, then the baseline's. */
    const statementsAt16: Array<Record<string, number>> = [];
    const thr: Record<number, { d: number; g: number; b?: number; pgUsG: number; pgUsB?: number; wireG: string; wireB?: string; failures: number }> = {};
    /** Calls per second, and Postgres's CPU per call (µs) over the phase: every postgres process, and the edge's own backends. */
    const measured = async (c: number, t: Target, w: PgWireCounter) => {
      const pg0 = postgresCpuSeconds();
      const { r, perCall, byStatement } = await counted(w, () => load(REQUESTS * 2, c, () => call(t, BODY)));
      if (c === 16) statementsAt16.push(byStatement);
      return { ...r, pgUs: ((postgresCpuSeconds() - pg0) * 1e6) / Math.max(1, r.lat.length), perCall };
    };
    for (const c of [16, 50]) {
      const d = target(mockUrl, { 'x-api-key': 'mock-key' }, c);
      const g = target(`http://127.0.0.1:${edgePort}`, { 'x-api-key': key }, c);
      const rd = await load(REQUESTS * 2, c, () => call(d, BODY));
      const rg = await measured(c, g, wire);
      const rb = BASELINE ? await measured(c, target(`http://127.0.0.1:${basePort}`, { 'x-api-key': key }, c), baseWire) : undefined;
      thr[c] = {
        d: rd.rps,
        g: rg.rps,
        b: rb?.rps,
        pgUsG: rg.pgUs,
        pgUsB: rb?.pgUs,
        wireG: rg.perCall,
        wireB: rb?.perCall,
        failures: rd.failures + rg.failures + (rb?.failures ?? 0),
      };
    }

    // memory: STREAMS streams held open through the gateway at once (the mock pings every second)
    const settled = async () =>
      Number((await db.dataSource.query<Array<{ n: number }>>(`SELECT count(*)::int AS n FROM tasks WHERE pool = 'chat' AND status = 'processing'`))[0].n);
    const rssBefore = treeMemMiB(edge.proc.pid, 'VmRSS');
    const many = target(`http://127.0.0.1:${edgePort}`, { 'x-api-key': key }, STREAMS);
    const controller = new AbortController();
    setMaxListeners(STREAMS + 10, controller.signal);
    let opened = 0;
    const streams = Array.from({ length: STREAMS }, async () => {
      const res = await many.pool.request({
        method: 'POST',
        path: '/v1/messages',
        headers: { ...many.headers, 'x-mock-hold-ms': '60000' },
        body: STREAM_BODY,
        signal: controller.signal,
      });
      let counted = false;
      try {
        for await (const _c of res.body) {
          if (!counted) {
            counted = true;
            opened++;
          }
        }
      } catch {
        // aborted at the end of the measurement
      }
    });
    await waitFor(() => opened >= STREAMS, { timeoutMs: 120_000, intervalMs: 200, what: `${STREAMS} open streams` });
    const rssOpen = treeMemMiB(edge.proc.pid, 'VmRSS');
    const heapOpen = await heapOf(`http://127.0.0.1:${edgePort}`);
    controller.abort();
    await Promise.allSettled(streams);
    await waitFor(async () => (await settled()) === 0, { timeoutMs: 60_000, intervalMs: 200, what: 'aborted streams settled' });

    const row = {
      date: new Date().toISOString().slice(0, 16).replace('T', ' '),
      machine: `${os.cpus().length}× ${os.cpus()[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
      direct: `p50 ${f2(pct(latD.lat, 50))} / p99 ${f2(pct(latD.lat, 99))} ms`,
      gateway: `p50 ${f2(pct(latG.lat, 50))} / p99 ${f2(pct(latG.lat, 99))} ms`,
      added: `+${f2(pct(latG.lat, 50) - pct(latD.lat, 50))} / +${f2(pct(latG.lat, 99) - pct(latD.lat, 99))} ms`,
      thr16: `${thr[16].g.toFixed(0)} vs ${thr[16].d.toFixed(0)}/s (${((100 * thr[16].g) / thr[16].d).toFixed(1)} %)`,
      thr50: `${thr[50].g.toFixed(0)} vs ${thr[50].d.toFixed(0)}/s (${((100 * thr[50].g) / thr[50].d).toFixed(1)} %)`,
      ttfb: `+${f2(pct(ttfbG.lat, 50) - pct(ttfbD.lat, 50))} ms p50 (${f2(pct(ttfbG.lat, 50))} vs ${f2(pct(ttfbD.lat, 50))})`,
      rss: `${rssOpen.toFixed(0)} MiB with ${STREAMS} open (${rssBefore.toFixed(0)} before)`,
      heap: heapOpen,
      healthz: `p50 ${f2(pct(floor.lat, 50))} ms`,
      serverTiming: serverTimingMedians(timings),
      failures: latD.failures + latG.failures + ttfbD.failures + ttfbG.failures + thr[16].failures + thr[50].failures,
    };
    const chat = {
      messages: `p50 ${f2(pct(vsChat.a, 50))} / p99 ${f2(pct(vsChat.a, 99))} ms`,
      chatCompletions: `p50 ${f2(pct(vsChat.b, 50))} / p99 ${f2(pct(vsChat.b, 99))} ms`,
      added: `${signed(pct(vsChat.b, 50) - pct(vsChat.a, 50))} / ${signed(pct(vsChat.b, 99) - pct(vsChat.a, 99))} ms`,
      ttfbAdded: `${signed(pct(vsChatTtfb.b, 50) - pct(vsChatTtfb.a, 50))} ms p50 (${f2(pct(vsChatTtfb.b, 50))} vs ${f2(pct(vsChatTtfb.a, 50))})`,
      failures: vsChat.failures + vsChatTtfb.failures,
    };
    const openaiPass = {
      messages: `p50 ${f2(pct(vsOpenAi.a, 50))} / p99 ${f2(pct(vsOpenAi.a, 99))} ms`,
      openaiChannel: `p50 ${f2(pct(vsOpenAi.b, 50))} / p99 ${f2(pct(vsOpenAi.b, 99))} ms`,
      added: `${signed(pct(vsOpenAi.b, 50) - pct(vsOpenAi.a, 50))} / ${signed(pct(vsOpenAi.b, 99) - pct(vsOpenAi.a, 99))} ms`,
      ttfbAdded: `${signed(pct(vsOpenAiTtfb.b, 50) - pct(vsOpenAiTtfb.a, 50))} ms p50 (${f2(pct(vsOpenAiTtfb.b, 50))} vs ${f2(pct(vsOpenAiTtfb.a, 50))})`,
      failures: vsOpenAi.failures + vsOpenAiTtfb.failures,
    };
    const pgCpu = Object.fromEntries(
      Object.entries(thr).map(([c, t]) => [
        `at${c}`,
        `${t.pgUsG.toFixed(0)} µs per call${t.pgUsB === undefined ? '' : ` (baseline ${t.pgUsB.toFixed(0)} µs)`}; ${t.wireG}${t.wireB === undefined ? '' : ` (baseline ${t.wireB})`}`,
      ]),
    );
    pgCpu.at1 = `${w1.perCall}${vsBaseCounted ? ` (baseline ${vsBaseCounted.perCall})` : ''}`;
    const statementsPerCall = {
      at1: w1.byStatement,
      ...(vsBaseCounted ? { at1Baseline: vsBaseCounted.byStatement } : {}),
      at16: statementsAt16[0],
      ...(statementsAt16[1] ? { at16Baseline: statementsAt16[1] } : {}),
    };
    const baseline =
      vsBase && vsBaseTtfb
        ? {
            revision: BASELINE,
            thisEdge: `p50 ${f2(pct(vsBase.a, 50))} / p99 ${f2(pct(vsBase.a, 99))} ms`,
            baselineEdge: `p50 ${f2(pct(vsBase.b, 50))} / p99 ${f2(pct(vsBase.b, 99))} ms`,
            thisMinusBaseline: `${signed(pct(vsBase.a, 50) - pct(vsBase.b, 50))} / ${signed(pct(vsBase.a, 99) - pct(vsBase.b, 99))} ms`,
            ttfbThisMinusBaseline: `${signed(pct(vsBaseTtfb.a, 50) - pct(vsBaseTtfb.b, 50))} ms p50 (${f2(pct(vsBaseTtfb.a, 50))} vs ${f2(pct(vsBaseTtfb.b, 50))})`,
            thr16: `${thr[16].g.toFixed(0)} vs baseline ${thr[16].b?.toFixed(0)}/s; direct ${thr[16].d.toFixed(0)}/s (${((100 * thr[16].g) / thr[16].d).toFixed(1)} % vs ${((100 * (thr[16].b ?? NaN)) / thr[16].d).toFixed(1)} %)`,
            failures: vsBase.failures + vsBaseTtfb.failures,
          }
        : undefined;
    console.log(
      JSON.stringify({ ...row, postgresCpu: pgCpu, statementsPerCall, chatCompletionsVsMessages: chat, openaiPassVsMessages: openaiPass, baseline }, null, 2),
    );
    insertRow(
      '| date (UTC) | machine | calls |',
      `| ${row.date} | ${row.machine} | ${REQUESTS} | ${row.direct} | ${row.gateway} | ${row.added} | ${row.thr16} | ${row.thr50} | ${row.ttfb} | ${row.rss} | ${row.healthz} | ${row.failures} |`,
    );
    insertRow(
      '| date (UTC) | machine | calls | /v1/messages @1 |',
      `| ${row.date} | ${row.machine} | ${REQUESTS} | ${chat.messages} | ${chat.chatCompletions} | ${chat.added} | ${chat.ttfbAdded} | ${chat.failures} |`,
    );
    if (row.failures + chat.failures + openaiPass.failures + (baseline?.failures ?? 0) > 0) process.exitCode = 1;
  } finally {
    await Promise.all(pools.map((p) => p.destroy()));
    await edge?.stop();
    await stop(baseEdge);
    await Promise.all(wires.map((w) => w.close()));
    mock?.kill('SIGTERM');
    await db.drop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
