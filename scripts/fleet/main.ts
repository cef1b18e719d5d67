/**
 * `npm run fleet`: the gateway as a cluster on one machine, a compressed day of traffic, the end-of-run checks, the
 * per-minute and total report, and the capacity model's prediction for the run's own load (scripts/fleet/README in
 * docs/capacity.md). Everything on free loopback ports, nothing shared with the machine's own Postgres and Redis,
 * everything torn down at the end, even on failure. Exit 0 only when every end-of-run check holds.
 *
 *   npm run fleet                                  # 2 minutes at a mean 40 requests/s (CI)
 *   FLEET_MINUTES=10 FLEET_RATE=125 FLEET_PEAK=1 npm run fleet
 *   FLEET_FAULTS=1 npm run fleet                   # kill -9 an edge, a worker, a billing replica and a Redis master
 */
import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { AccountRepository, ApiKeyRepository, ChannelRepository, GroupRepository, createDataSource, loadPrices, runMigrations } from '@gmg/db';
import { REPO_ROOT } from '@gmg/testing';
import { ChaosPostgres } from '../../test/chaos/infra';
import { MODEL_POOLS } from './capacity-model';
import { COSTS_FILE, calibrateAndCost, fitWindows, measureCosts, measureUpstream, modelCheck } from './costs';
import { dayCurve, loadFleetConfig, type FleetConfig } from './config';
import { problems, verify } from './checks';
import { Driver, type Account } from './driver';
import { plannedFaults, type FaultResult } from './faults';
import { startPgBouncer, startRedisCluster, startStandaloneRedis, type Bouncer, type RedisTopology } from './infra';
import type { FleetCheck } from './capacity-model';
import { cpuTable, dataTable, makeRow, mergeWindows, processTable, throughputTable, type Row } from './report';
import { Sampler, type MetricsTarget, type Proc, type Snapshot } from './sampler';
import { FleetServices } from './services';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver';

const DB = 'gmg_fleet';
const PREFIX = 'fleet';
const SHARDS = 'image=2,video=2,artgen=1,avatar=1';
const ADMIN_TOKEN = 'fleet-admin-token-0123456789abcdef';
const log = (l: string): void => {
  process.stdout.write(`fleet | ${l}\n`);
};

/** Sums the CPU of a process and its children (Postgres: the postmaster and its backends). */
function postmasterPid(root: string): number | undefined {
  try {
    return Number(readFileSync(path.join(root, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return undefined;
  }
}

/** Who took the cores, and what one core carries (the gateway's own processes: not the simulator or the driver). */
function coresLine(total: Row): string {
  const groups = Object.entries(total.cpu).sort((a, b) => b[1] - a[1]);
  const all = groups.reduce((a, [, v]) => a + v, 0);
  const gateway = groups.filter(([g]) => g !== 'upstream-sim' && g !== 'fleet-driver').reduce((a, [, v]) => a + v, 0);
  const perCore = total.completedPerS > 0 ? (100 * total.completedPerS) / gateway : NaN;
  return (
    `cores: the fleet used ${(all / 100).toFixed(2)} of ${cpus().length} (${groups
      .slice(0, 4)
      .map(([g, v]) => `${g} ${(v / 100).toFixed(2)}`)
      .join(', ')}); ` +
    `the gateway's own processes ${(gateway / 100).toFixed(2)} cores for ${total.completedPerS.toFixed(1)} tasks/s = ${perCore.toFixed(1)} tasks/s per core`
  );
}

interface World {
  root: string;
  pg?: ChaosPostgres;
  redis?: RedisTopology;
  bouncer?: Bouncer;
  services?: FleetServices;
  hooks?: WebhookReceiver;
  driver?: Driver;
}

async function teardown(w: World): Promise<void> {
  await w.driver?.stop().catch(() => undefined);
  await w.services?.stop().catch(() => undefined);
  await w.hooks?.close().catch(() => undefined);
  await w.bouncer?.stop().catch(() => undefined);
  await w.redis?.stop().catch(() => undefined);
  await w.pg?.stop().catch(() => undefined);
  rmSync(w.root, { recursive: true, force: true });
}

async function seed(directUrl: string, simUrl: string, n: number): Promise<Account[]> {
  const ds = createDataSource({ url: directUrl, poolSize: 4, applicationName: 'gmg-fleet-seed' });
  await ds.initialize();
  try {
    await runMigrations(ds);
    await loadPrices(ds, path.join(REPO_ROOT, 'infra/prices.json'));
    const channels = new ChannelRepository(ds);
    await channels.create({ name: 'sim', baseUrl: simUrl, apiKey: 'fleet-sim' });
    await channels.create({ name: 'sim-messages', protocol: 'messages', baseUrl: simUrl, apiKey: 'fleet-sim' });
    // capacity, not the default group's fair-use limits (docs/rate-limits.md), is what the fleet measures
    await new GroupRepository(ds).upsert({ name: 'fleet-unlimited', priceRatio: 1, models: null, rpsLimit: null, inflightLimit: null });
    const accounts = new AccountRepository(ds);
    const keys = new ApiKeyRepository(ds);
    const out: Account[] = [];
    for (let i = 0; i <= n; i++) {
      const hot = i === 0;
      const a = await accounts.create({ name: hot ? 'fleet-hot' : `fleet-${i}`, groupName: 'fleet-unlimited' });
      await accounts.topup(a.id, 10n ** 15n);
      const k = await keys.create({ accountId: a.id, groupName: 'fleet-unlimited', rpsLimit: 1_000_000, inflightLimit: 1_000_000 });
      out.push({ id: a.id, key: k.secret, hot });
    }
    return out;
  } finally {
    await ds.destroy();
  }
}

function topologyLine(cfg: FleetConfig, redis: RedisTopology): string {
  return [
    `redis: ${redis.kind === 'cluster' ? `cluster of ${redis.nodes.length} nodes (3 masters + replicas), services on ${'REDIS_CLUSTER_NODES'}` : 'one standalone redis-server of its own (REDIS_URL)'}`,
    `queues: sharded QUEUE_SHARDS=${SHARDS}`,
    'postgres: own server, services through PgBouncer (transaction mode), PG_POOL_MAX and timeouts set, migrations direct',
    `load: mean ${cfg.rate} req/s, peak ×${cfg.peak}, ${cfg.minutes} min${cfg.faults ? ', FAULTS' : ''}`,
  ].join(' · ');
}

async function main(): Promise<number> {
  const cfg = loadFleetConfig();
  // every child process and server registers a reaper on the fleet's exit (about 25 of them)
  process.setMaxListeners(64);
  const loadMs = cfg.minutes * 60_000;
  // the whole run is bounded: start-up, calibration, load, drain and teardown
  const hardLimitMs = loadMs + (cfg.drainS + 4 * cfg.calibrateS + cfg.idleS + 420) * 1000;
  const w: World = { root: mkdtempSync(path.join(tmpdir(), 'gmg-fleet-')) };
  const killer = setTimeout(() => {
    log(`over ${(hardLimitMs / 60_000).toFixed(1)} min: tearing down and failing`);
    void teardown(w).finally(() => process.exit(2));
  }, hardLimitMs);
  killer.unref();
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => {
      log(`${sig}: tearing down`);
      void teardown(w).finally(() => process.exit(130));
    });

  try {
    log(execFileSync(process.execPath, [path.join(REPO_ROOT, 'scripts', 'build.mjs')], { cwd: REPO_ROOT, encoding: 'utf8' }).trim());
    const [pg, redis] = await Promise.all([ChaosPostgres.start(w.root), cfg.redis === 'standalone' ? startStandaloneRedis(w.root) : startRedisCluster(w.root)]);
    w.pg = pg;
    w.redis = redis;
    const directUrl = await pg.createDatabase(DB);
    w.bouncer = await startPgBouncer(w.root, pg.port, DB, 40);
    log(topologyLine(cfg, redis));

    w.services = new FleetServices(w.root);
    const simScale = String(cfg.simScale);
    // the simulator first: the channels point at it
    const common: Record<string, string> = {
      ...redis.env,
      DATABASE_URL: w.bouncer.url,
      MIGRATION_DATABASE_URL: directUrl,
      QUEUE_PREFIX: PREFIX,
      LOG_LEVEL: 'warn',
      QUEUE_SHARDS: SHARDS,
      PG_POOL_MAX: '8',
      PG_CONNECT_TIMEOUT_MS: '5000',
      PG_STATEMENT_TIMEOUT_MS: '30000',
      PG_LOCK_TIMEOUT_MS: '10000',
      PG_IDLE_IN_TX_TIMEOUT_MS: '30000',
    };
    // the simulator's port is only known once it runs; channels are seeded after it starts
    let accounts: Account[] = [];
    await w.services.start(
      { edges: 2, workersPerPool: 2, billing: 2 },
      common,
      {
        sim: { SIM_TIME_SCALE: simScale, SIM_API_KEY: 'fleet-sim' },
        edge: { ADMIN_TOKEN, WEBHOOK_ALLOW_INSECURE: '1' },
        worker: { POLL_INTERVAL_SCALE: String(cfg.pollScale) },
        billing: { WEBHOOK_ALLOW_INSECURE: '1' },
      },
      async (simUrl) => {
        accounts = await seed(directUrl, simUrl, cfg.accounts);
      },
    );
    log(
      `up: ${w.services
        .all()
        .map((r) => r.id)
        .join(', ')}; ${accounts.length} accounts (1 hot, ${(cfg.hotShare * 100).toFixed(0)} % of the traffic)`,
    );

    w.hooks = await startWebhookReceiver();
    const edges = w.services.edges().map((r) => `http://127.0.0.1:${r.port}`);
    const procs = (): Proc[] => [
      ...w.services!.all().map((r) => ({ label: r.id, pid: () => r.sp.proc.pid })),
      ...redis.nodes.map((n) => ({ label: `redis:${n.port}`, pid: () => n.proc.pid })),
      { label: 'pgbouncer', pid: () => w.bouncer!.proc.pid },
      { label: 'postgres', pid: () => postmasterPid(w.root), tree: true },
      { label: 'fleet-driver', pid: () => process.pid },
    ];
    const metricsTargets = (): MetricsTarget[] =>
      w.services!.replicas.filter((r) => r.service !== 'api-edge').map((r) => ({ label: r.id, service: r.service, url: `http://127.0.0.1:${r.port}/metrics` }));
    const sampler = new Sampler(procs, redis, w.bouncer, directUrl, DB, metricsTargets);

    // calibration: the ratios of the edge's CPU per poll, per submit and per messages call, each alone, before the day
    const calibration = cfg.calibrateS > 0 ? await calibrateAndCost(cfg, edges, accounts, sampler) : undefined;

    const driver = new Driver({
      edges,
      accounts,
      hotShare: cfg.hotShare,
      mix: cfg.mix,
      rate: dayCurve(cfg),
      durationMs: loadMs,
      pollEveryMs: cfg.pollEveryMs,
      webhookShare: cfg.webhookShare,
      webhookUrl: w.hooks.url,
      maxInFlight: cfg.maxInFlight,
    });
    w.driver = driver;
    // the calibration's messages calls are recorded and captured like the day's: the end-of-run checks count them
    driver.messagesOk += calibration?.messagesAnswered ?? 0;

    const faults = cfg.faults ? plannedFaults(w.services, redis, loadMs) : [];
    const faultResults: FaultResult[] = [];
    const events: string[] = [];
    const snaps: Snapshot[] = [await sampler.snapshot()];
    const rows: Row[] = [];
    const windows = [];
    const peakRss = new Map<string, number>();
    const t0 = Date.now();
    const loadAtStart = loadavg()[0]!;
    const rate = dayCurve(cfg);
    const run = driver.run();
    const faultRuns = faults.map(
      (f) =>
        new Promise<void>((resolve) => {
          setTimeout(() => {
            events.push(f.what);
            log(`fault: ${f.what}`);
            f.run()
              .then(
                (r) => {
                  faultResults.push({ what: f.what, atS: f.at / 1000, ...r });
                  log(`healed: ${f.what} in ${(r.healMs / 1000).toFixed(2)} s (${r.note})`);
                },
                (e: Error) => {
                  faultResults.push({ what: f.what, atS: f.at / 1000, healMs: NaN, note: `FAILED: ${e.message.split('\n')[0]}` });
                },
              )
              .finally(resolve);
          }, f.at);
        }),
    );
    const nWindows = Math.max(1, Math.ceil(loadMs / (cfg.windowS * 1000)));
    for (let i = 1; i <= nWindows; i++) {
      const end = t0 + Math.min(loadMs, i * cfg.windowS * 1000);
      await new Promise((r) => setTimeout(r, Math.max(0, end - Date.now())));
      const snap = await sampler.snapshot();
      for (const [k, v] of Object.entries(snap.rss)) if (Number.isFinite(v)) peakRss.set(k, Math.max(peakRss.get(k) ?? 0, v));
      const win = driver.take();
      windows.push(win);
      const prev = snaps[snaps.length - 1]!;
      const midT = (prev.at + snap.at) / 2 - t0;
      const row = makeRow(`${((snap.at - t0) / 60_000).toFixed(1)} min`, prev, snap, win, rate(midT), events.splice(0));
      rows.push(row);
      snaps.push(snap);
      log(
        `${row.label}: ${row.submitsPerS.toFixed(1)} submits/s, ${row.completedPerS.toFixed(1)} completed/s, submit p99 ${row.submitP99.toFixed(0)} ms, poll p99 ${row.pollP99.toFixed(0)} ms, worker poll lateness p99 ${row.latePolls > 0 ? `${row.lateP99.toFixed(0)} ms over ${row.latePolls} polls` : '– (no poll claimed)'}, CPU ${Object.values(
          row.cpu,
        )
          .reduce((a, b) => a + b, 0)
          .toFixed(0)} %`,
      );
    }
    await run;
    await Promise.all(faultRuns);
    log(`load phase over; draining (≤ ${cfg.drainS} s) and checking`);
    const verdict = await verify(directUrl, driver, w.hooks, cfg.drainS * 1000);
    const end = await sampler.snapshot();
    const total = makeRow('total (load phase)', snaps[0]!, snaps[snaps.length - 1]!, mergeWindows(windows), cfg.rate, []);
    total.failed = end.failed - snaps[0]!.failed;
    // a Redis node restarted mid-run resets its counter: the total is the sum of the windows
    total.redisCmdsPerS = rows.reduce((a, r) => a + r.redisCmdsPerS * r.seconds, 0) / total.seconds;
    const bad = problems(verdict, cfg.faults);
    const machine = `${cpus().length}× ${cpus()[0]?.model.trim() ?? '?'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
    const activeServers = snaps.reduce((s, x) => s + x.bouncerActive, 0) / snaps.length;
    const answered = {
      tasks: windows.reduce((a, x) => a + x.accepted, 0),
      polls: windows.reduce((a, x) => a + x.polls, 0),
      messages: windows.reduce((a, x) => a + x.messages, 0),
    };
    const first = measureCosts(snaps[0]!, snaps[snaps.length - 1]!, end, driver, calibration, cfg, machine, activeServers, answered);
    const upstream = await measureUpstream(directUrl, cfg.pollScale, first.stepsPerTask);
    // the costs: per resource a line through the windows (fixed cost while serving + cost per operation) where it fits
    const measured = fitWindows(
      measureCosts(snaps[0]!, snaps[snaps.length - 1]!, end, driver, calibration, cfg, machine, activeServers, answered, upstream),
      snaps,
      windows,
      calibration,
    );
    const model = modelCheck(measured, cfg.costsRef ?? COSTS_FILE);
    const { derivation: d, fitted, ...costs } = measured;
    // the costs this run measured, checked against the run itself (the model must at least reproduce its own run)
    const self = modelCheck(costs, costs, 'phase');
    const derivationLine =
      `costs of this run: ${d.tasks} tasks, ${d.polls} client polls, ${d.messages} messages calls in ${d.seconds.toFixed(0)} s; ` +
      `edge ${d.edgeCpuS.toFixed(1)} CPU s = ${costs.edgeMsPerSubmit.toFixed(2)} ms/submit + ${costs.edgeMsPerPoll.toFixed(2)} ms/poll + ${(costs.edgeMsPerMessage ?? 0).toFixed(2)} ms/messages call ` +
      `(×${d.edgeLevel.toFixed(2)} the calibration's); billing ${d.billingCpuS.toFixed(1)} CPU s over ${d.settlements} settlement attempts (${(costs.settlementsPerTask ?? 0).toFixed(2)} per task) = ${costs.billingMsPerSettlement.toFixed(2)} ms each ` +
      `(to the end of the drain, ${((end.at - snaps[snaps.length - 1]!.at) / 1000).toFixed(0)} s later: ${d.billingCpuSToEnd.toFixed(1)} CPU s over ${d.settlementsToEnd}); ` +
      `PgBouncer ${d.bouncerCpuS.toFixed(1)} CPU s over ${d.bouncerXacts} pooled transactions (the server counted ${d.pgXacts}) = ${costs.bouncerMsPerTx.toFixed(3)} ms each; ` +
      `worker steps ${MODEL_POOLS.map((p) => `${p} ${d.steps[p]}`).join(', ')}; ` +
      `fitted over the ${windows.length} windows (fixed cost while serving + per operation): ${fitted.length ? fitted.join(', ') : 'none (the whole phase, less the idle fixed cost)'}`;
    const upstreamLine =
      `upstream (SIM_TIME_SCALE ${cfg.simScale}, POLL_INTERVAL_SCALE ${cfg.pollScale}: task times compressed ${(1 / cfg.pollScale).toFixed(1)}×): ` +
      MODEL_POOLS.map(
        (p) =>
          `${p} open ${(upstream[p].durationS * cfg.pollScale).toFixed(1)} s (real ${upstream[p].durationS.toFixed(1)} s), ${costs.stepsPerTask[p].toFixed(1)} steps per task`,
      ).join('; ');
    if (cfg.strictModel && model.within < model.of)
      bad.push(`capacity model: ${model.of - model.within} of ${model.of} quantities off by more than 25 % (FLEET_MODEL_STRICT)`);
    const out = [
      `## Fleet run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC · ${machine}`,
      '',
      topologyLine(cfg, redis),
      '',
      throughputTable([...rows, total]),
      '',
      dataTable([...rows, total]),
      '',
      'CPU by service, % of one core:',
      '',
      cpuTable([...rows, total]),
      '',
      processTable(snaps[0]!, snaps[snaps.length - 1]!, peakRss),
      '',
      faultResults.length
        ? [
            '| fault | at | time to heal | note |',
            '|---|---|---|---|',
            ...faultResults.map((f) => `| ${f.what} | ${f.atS.toFixed(0)} s | ${(f.healMs / 1000).toFixed(2)} s | ${f.note} |`),
          ].join('\n')
        : 'faults: none (FLEET_FAULTS=1 injects them)',
      '',
      `end-of-run checks: ${verdict.accepted} tasks accepted, ${verdict.inDatabase} in the database, ${verdict.open} not terminal, ${verdict.missing} lost, ` +
        `${verdict.unsettled} not settled exactly once, ${verdict.doubleSettled} double-settled, ${verdict.completed} completed, ${verdict.failed} failed (+ ${verdict.cancelled} calibration tasks cancelled); ` +
        `chat calls ${verdict.chatAnswered} answered / ${verdict.chatCalls} recorded (${verdict.chatBad} without exactly one capture); ` +
        `${verdict.accountsChecked} accounts, ledger invariants broken: ${verdict.ledger.length ? verdict.ledger.join(', ') : 'none'} (held at the end ${verdict.heldAtEnd}); ` +
        `webhooks ${verdict.webhooksExpected - verdict.webhooksMissing} / ${verdict.webhooksExpected} delivered, ${verdict.webhookDuplicates} duplicates; ` +
        `drained in ${(verdict.drainMs / 1000).toFixed(1)} s; ambiguous submits (connection cut, no answer) ${driver.ambiguous}`,
      '',
      coresLine(total),
      '',
      model.text,
      '',
      derivationLine,
      '',
      upstreamLine,
      '',
      self.text,
      '',
      bad.length ? `RESULT: RED — ${bad.join('; ')}` : 'RESULT: green',
    ].join('\n');
    process.stdout.write(`\n${out}\n`);
    if (cfg.reportFile) writeFileSync(cfg.reportFile, `${out}\n`);
    if (cfg.checkOut) {
      const check: FleetCheck = {
        at: new Date(t0).toISOString(),
        machine,
        loadAverage: [loadAtStart, loadavg()[0]!],
        env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('FLEET_') && !/_(OUT|REPORT|REF)$/.test(k))) as Record<string, string>,
        rate: cfg.rate,
        minutes: cfg.minutes,
        completedPerS: measured.run.completedPerS,
        gatewayCores: Object.entries(total.cpu).reduce((a, [g, v]) => a + (g === 'upstream-sim' || g === 'fleet-driver' ? 0 : v), 0) / 100,
        upstream: upstreamLine,
        within: model.within,
        of: model.of,
        text: model.text,
        result: bad.length ? `RED — ${bad.join('; ')}` : 'green',
      };
      writeFileSync(cfg.checkOut, `${JSON.stringify(check, null, 2)}\n`);
    }
    // the raw windows (every snapshot and what the driver saw in each): the costs can be fitted again from them
    if (process.env.FLEET_SNAPS_OUT)
      writeFileSync(
        process.env.FLEET_SNAPS_OUT,
        `${JSON.stringify({ cfg, machine, activeServers, calibration, upstream, snaps, end, answered, windows: windows.map((x) => ({ accepted: x.accepted, polls: x.polls, messages: x.messages })), kinds: [...driver.tasks.values()].map((t) => t.kind) })}\n`,
      );
    if (cfg.costsOut) writeFileSync(cfg.costsOut, `${JSON.stringify({ ...costs, derivation: d, check: model.text, selfCheck: self.text }, null, 2)}\n`);
    if (bad.length) for (const r of w.services.all()) if (!w.services.alive(r)) log(`--- ${r.id} exited ---\n${w.services.tail(r)}`);
    return bad.length ? 1 : 0;
  } finally {
    log('tearing down');
    await teardown(w);
    clearTimeout(killer);
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error('fleet failed:', e);
    process.exit(1);
  },
);
