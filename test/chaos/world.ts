/**
 * The system under fault: upstream simulator (behind a switchable proxy: the "internet"), api-edge, worker-image and
 * billing as real processes on the suite's own Redis and Postgres, plus the checks every scenario ends with.
 */
import http from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AccountRepository, ApiKeyRepository, ChannelRepository, GroupRepository, createDataSource, loadPrices, runMigrations } from '@gmg/db';
import { checkLedger, freePort, REPO_ROOT, startLocalRedisCluster, startService, waitFor, type LocalRedisCluster, type ServiceProcess } from '@gmg/testing';
import type { DataSource } from 'typeorm';
import { ChaosPgBouncer, ChaosPostgres, ChaosRedis, ChaosTcpProxy, removeDir } from './infra';

export const SWEEP_INTERVAL_MS = 2000;
const ADMIN_TOKEN = 'chaos-admin-token-0123456789abcdef';

/**
 * Forwards to the simulator, or answers 503 while `failing` (an upstream outage); holds every answer `delayMs` (a
 * slow upstream); answers garbage while `poison` (a broken upstream: see POISON).
 */
export interface FaultyUpstream {
  url: string;
  failing: boolean;
  delayMs: number;
  poison: boolean;
  /** Answers that were garbage. */
  poisoned: number;
  refused: number;
  /** Submits (POST) passed through to the simulator. */
  forwarded: number;
  close(): Promise<void>;
}

/** What a broken upstream answers, in turn: each must end as a retry or a clean failure, never a crash or a stuck task. */
const POISON: Array<(res: http.ServerResponse) => void> = [
  (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"data": [{"task_id": '),
  (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: { id: 42, status: ['completed'], result: 'x' } })),
  (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: { id: 'x', status: 'exploded', progress: 'a lot' } })),
  (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(`{"pad":"${'x'.repeat(2 * 1024 * 1024)}"}`),
  (res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>Bad Gateway</body></html>'),
  (res) => res.destroy(),
  (res) => res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' }).end('{"data":'),
];

async function startFaultyUpstream(target: string): Promise<FaultyUpstream> {
  const port = await freePort();
  const t = new URL(target);
  const state = { failing: false, delayMs: 0, poison: false, poisoned: 0, refused: 0, forwarded: 0 };
  const server = http.createServer((req, res) => {
    if (state.delayMs > 0) {
      const t = setTimeout(() => answer(req, res), state.delayMs);
      res.on('close', () => clearTimeout(t));
      return;
    }
    answer(req, res);
  });
  const answer = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    if (state.poison) {
      req.resume();
      POISON[state.poisoned++ % POISON.length]!(res);
      return;
    }
    if (state.failing) {
      state.refused++;
      req.resume();
      res
        .writeHead(503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { code: 503, message: 'upstream outage (chaos)', type: 'service_unavailable' } }));
      return;
    }
    if (req.method === 'POST') state.forwarded++;
    const up = http.request({ host: t.hostname, port: t.port, path: req.url, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    req.pipe(up);
  };
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    get failing() {
      return state.failing;
    },
    set failing(v: boolean) {
      state.failing = v;
    },
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(v: number) {
      state.delayMs = v;
    },
    get poison() {
      return state.poison;
    },
    set poison(v: boolean) {
      state.poison = v;
    },
    get poisoned() {
      return state.poisoned;
    },
    get refused() {
      return state.refused;
    },
    get forwarded() {
      return state.forwarded;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

type Svc = 'edge' | 'worker' | 'billing';

export class World {
  redis!: ChaosRedis;
  pg!: ChaosPostgres;
  /** Between the services and Postgres (or PgBouncer): latency injected on the network, the server itself fine. */
  pgProxy!: ChaosTcpProxy;
  /** CHAOS_PGBOUNCER=1: the services reach Postgres through PgBouncer (transaction mode), migrations and checks go direct. */
  pooler: ChaosPgBouncer | undefined;
  /** CHAOS_REDIS_CLUSTER=1: the services use a Redis Cluster of the suite's own (3 masters, a replica each), not `redis`. */
  cluster: LocalRedisCluster | undefined;
  ds!: DataSource;
  upstream!: FaultyUpstream;
  base = '';
  /** The simulator itself (a backup channel bypasses the faulty proxy). */
  simUrl = '';
  readonly procs: Partial<Record<Svc | 'sim', ServiceProcess>> = {};
  /** Processes started beside the main ones (startExtra: another QUEUE_SHARDS, say); stopped with the world. */
  readonly extras: ServiceProcess[] = [];
  private readonly envs: Partial<Record<Svc, { env: Record<string, string>; health: string }>> = {};
  private root = '';
  private dbUrl = '';

  async start(): Promise<void> {
    this.root = mkdtempSync(path.join(tmpdir(), 'gmg-chaos-'));
    [this.redis, this.pg] = await Promise.all([ChaosRedis.start(this.root), ChaosPostgres.start(this.root)]);
    this.dbUrl = await this.pg.createDatabase('gmg_chaos');
    if (process.env.CHAOS_PGBOUNCER === '1') this.pooler = await ChaosPgBouncer.start(this.root, this.pg);
    if (process.env.CHAOS_REDIS_CLUSTER === '1') this.cluster = await startLocalRedisCluster({ masters: 3, replicasPerMaster: 1, nodeTimeoutMs: 2000 });
    const direct = new URL(this.pooler ? this.pooler.url('gmg_chaos') : this.dbUrl);
    this.pgProxy = await ChaosTcpProxy.start(Number(direct.port));
    direct.port = String(this.pgProxy.port);
    const serviceDbUrl = direct.toString();
    this.ds = createDataSource({ url: this.dbUrl, poolSize: 5, applicationName: 'gmg-chaos' });
    await this.ds.initialize();
    await runMigrations(this.ds);
    await loadPrices(this.ds, path.join(REPO_ROOT, 'infra/prices.json'));
    const [simPort, edgePort, workerPort, billingPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    this.procs.sim = await startService('upstream-sim', { PORT: String(simPort), SIM_TIME_SCALE: '0.2' }, `http://127.0.0.1:${simPort}/healthz`);
    this.simUrl = `http://127.0.0.1:${simPort}`;
    this.upstream = await startFaultyUpstream(this.simUrl);
    await new ChannelRepository(this.ds).create({ name: 'sim', baseUrl: this.upstream.url });
    const common = {
      DATABASE_URL: serviceDbUrl,
      MIGRATION_DATABASE_URL: this.dbUrl,
      REDIS_URL: this.redis.url,
      QUEUE_PREFIX: 'chaos',
      REDIS_REQUIRE_NOEVICTION: 'false',
      ...(this.cluster ? { REDIS_CLUSTER_NODES: this.cluster.nodesEnv } : {}),
    };
    // a short lease life: a killed edge's chat leases are swept within seconds (edge-streams scenario)
    this.envs.edge = {
      env: { ...common, PORT: String(edgePort), ADMIN_TOKEN, UPLOAD_DIR: path.join(this.root, 'uploads'), MESSAGES_LEASE_TTL_SECONDS: '3' },
      health: `http://127.0.0.1:${edgePort}/readyz`,
    };
    this.envs.worker = {
      env: { ...common, HEALTH_PORT: String(workerPort), POLL_INTERVAL_SCALE: '0.1', SWEEP_INTERVAL_MS: String(SWEEP_INTERVAL_MS), WORKER_LOCK_MS: '5000' },
      health: `http://127.0.0.1:${workerPort}/readyz`,
    };
    this.envs.billing = {
      env: { ...common, HEALTH_PORT: String(billingPort), SWEEP_INTERVAL_MS: String(SWEEP_INTERVAL_MS), UNSETTLED_AFTER_MS: String(SWEEP_INTERVAL_MS) },
      health: `http://127.0.0.1:${billingPort}/readyz`,
    };
    await Promise.all((['edge', 'worker', 'billing'] as const).map((s) => this.startSvc(s)));
    this.base = `http://127.0.0.1:${edgePort}`;
  }

  async startSvc(s: Svc): Promise<ServiceProcess> {
    const name = { edge: 'api-edge', worker: 'worker-image', billing: 'billing' }[s];
    const e = this.envs[s]!;
    const p = await startService(name, e.env, e.health);
    this.procs[s] = p;
    return p;
  }

  /**
   * One more process of `s` beside the running ones: the same environment with `env` over it, on a port of its own.
   * Returns it and its base URL (the edge's API, a worker's or billing's health server).
   */
  async startExtra(s: Svc, env: Record<string, string>): Promise<{ proc: ServiceProcess; base: string }> {
    const name = { edge: 'api-edge', worker: 'worker-image', billing: 'billing' }[s];
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = await startService(name, { ...this.envs[s]!.env, ...env, [s === 'edge' ? 'PORT' : 'HEALTH_PORT']: String(port) }, `${base}/readyz`);
    this.extras.push(proc);
    return { proc, base };
  }

  /** Every service process still running (none crashed). */
  deadServices(): string[] {
    return (['sim', 'edge', 'worker', 'billing'] as const).filter((s) => {
      const p = this.procs[s];
      return !p || p.proc.exitCode !== null || p.proc.signalCode !== null;
    });
  }

  async healthy(): Promise<boolean> {
    const rs = await Promise.all(
      (['edge', 'worker', 'billing'] as const).map((s) =>
        fetch(this.envs[s]!.health)
          .then((r) => r.ok)
          .catch(() => false),
      ),
    );
    return rs.every(Boolean);
  }

  async stop(): Promise<void> {
    await Promise.all([...Object.values(this.procs), ...this.extras].map((p) => p?.stop().catch(() => undefined)));
    await this.upstream?.close();
    await this.pgProxy?.stop();
    if (this.ds?.isInitialized) await this.ds.destroy().catch(() => undefined);
    await this.pooler?.stop();
    await this.cluster?.stop();
    await Promise.all([this.redis?.stop(), this.pg?.stop()]);
    if (this.root) removeDir(this.root);
  }

  /**
   * A fresh account with a funded API key: each scenario's money is checked on its own. Its group has no fair-use
   * limits (the default group's 20 requests/s and 50 in flight would turn the bursts into 429s and measure those).
   */
  async account(name: string, balanceMinor = 10_000_000_000n): Promise<{ accountId: string; key: string }> {
    const accounts = new AccountRepository(this.ds);
    await new GroupRepository(this.ds).upsert({ name: 'chaos-unlimited', priceRatio: 1, models: null, rpsLimit: null, inflightLimit: null });
    const a = await accounts.create({ name, groupName: 'chaos-unlimited' });
    await accounts.topup(a.id, balanceMinor);
    const k = await new ApiKeyRepository(this.ds).create({ accountId: a.id });
    return { accountId: a.id, key: k.secret };
  }

  async submit(
    key: string,
    body: unknown,
    init: { contentType?: string; raw?: string | Buffer; path?: string; base?: string; timeoutMs?: number } = {},
  ): Promise<{ status: number; body: any }> {
    const r = await fetch(`${init.base ?? this.base}${init.path ?? '/v1/images/generations'}`, {
      method: 'POST',
      ...(init.timeoutMs ? { signal: AbortSignal.timeout(init.timeoutMs) } : {}),
      headers: { authorization: `Bearer ${key}`, 'content-type': init.contentType ?? 'application/json' },
      body: init.raw ?? JSON.stringify(body),
    });
    const text = await r.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { status: r.status, body: parsed };
  }

  /** Submits `n` image tasks and returns their ids (every submit must be accepted). */
  async submitMany(key: string, n: number, prompt: (i: number) => string): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await this.submit(key, { model: 'lumen-2-flex', prompt: prompt(i) });
      if (r.status !== 200) throw new Error(`submit ${i} answered ${r.status}: ${JSON.stringify(r.body)}`);
      ids.push(r.body.data[0].task_id as string);
    }
    return ids;
  }

  async count(sql: string, params: unknown[]): Promise<number> {
    const rows: Array<{ n: number }> = await this.ds.query(sql, params);
    return Number(rows[0]!.n);
  }

  /** Waits until `n` of the tasks are in one of `statuses` (bounded). */
  async waitStatus(ids: string[], statuses: string[], n: number, timeoutMs: number): Promise<void> {
    await waitFor(
      async () => (await this.count(`SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1) AND status = ANY($2)`, [ids, statuses])) >= n || undefined,
      { timeoutMs, intervalMs: 100, what: `${n} tasks ${statuses.join('/')}` },
    );
  }
}

export interface Verdict {
  tasks: number;
  terminal: number;
  settledOnce: number;
  invariant: boolean;
  /** The ledger invariants broken (checkLedger), as `name: count (e.g. id)`; empty when `invariant`. */
  broken: string[];
  completed: number;
  failed: number;
}

/**
 * The closing check of every scenario: waits (bounded) until every accepted task is terminal and settled, and (bounded)
 * for the account's leases to close (held = 0), then checks the account's ledger (checkLedger): every invariant, every
 * task terminal and settled, no lease active — with held = the unsettled tasks + the active leases' rest, that is held = 0.
 */
export async function verify(w: World, accountId: string, ids: string[], timeoutMs = 120_000): Promise<Verdict> {
  const settledSql = `SELECT count(*)::int AS n FROM tasks t WHERE t.id = ANY($1) AND t.status IN ('completed','failed')
      AND (SELECT count(*) FROM ledger_entries l WHERE l.task_id = t.id AND l.kind = 'hold') = 1
      AND (SELECT count(*) FROM ledger_entries l WHERE l.task_id = t.id AND l.kind IN ('capture','release')) = 1`;
  await waitFor(async () => (await w.count(settledSql, [ids])) === ids.length || undefined, {
    timeoutMs,
    intervalMs: 200,
    what: 'every task terminal and settled',
  }).catch(() => undefined);
  const terminal = await w.count(`SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1) AND status IN ('completed','failed')`, [ids]);
  const completed = await w.count(`SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1) AND status = 'completed'`, [ids]);
  const settledOnce = await w.count(settledSql, [ids]);
  // a busy account's edge holds its tasks from a credit lease (docs/reliability.md, "Hot accounts"): its unspent rest
  // is `held` until the lease closes (TASK_LEASE_IDLE_SECONDS after its last task, or by the sweeper once expired)
  await waitFor(async () => (await w.count(`SELECT count(*)::int AS n FROM accounts WHERE id = $1 AND held = 0`, [accountId])) === 1 || undefined, {
    timeoutMs: 60_000,
    intervalMs: 200,
    what: "the account's leases closed (held = 0)",
  }).catch(() => undefined);
  const broken = (await checkLedger(w.ds, { accounts: [accountId], settled: true, leasesClosed: true })).map(
    (v) => `${v.invariant}: ${v.count} (e.g. ${v.example})`,
  );
  return { tasks: ids.length, terminal, settledOnce, invariant: broken.length === 0, broken, completed, failed: terminal - completed };
}
