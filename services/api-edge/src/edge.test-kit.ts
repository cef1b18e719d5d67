import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { Server } from 'node:http';
import type { Express } from 'express';
import path from 'node:path';
import { toMinor, type Pool } from '@gmg/contracts';
import { AccountRepository, ApiKeyRepository, GroupRepository, PriceRepository, loadPrices } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { Producers, createRedis, createTaskQueue, type Redis, type TaskQueue } from '@gmg/queue';
import { REPO_ROOT, TEST_REDIS_TARGET, createTestDatabase, uniqueRedisPrefix, type TestDatabase, deleteRedisPrefix } from '@gmg/testing';
import { createApp, type AppDeps, type EdgeBackground } from './app';
import { loadApiEdgeConfig, type ApiEdgeConfig } from './config';
import { startEdgeTimers } from './edge-timers';
import { appServer } from './http/app-server';

/** Prices the edge tests rely on when infra/prices.json is absent (currency units per image). */
export const TEST_PRICES: Record<string, number> = {
  'lumen-2-flex': 0.02,
  'lumen-2-pro': 0.05,
  'lumen-2-pro@4MP': 0.08,
  'lumen-2-max': 0.1,
};

export interface EdgeHarness {
  db: TestDatabase;
  redis: Redis;
  prefix: string;
  config: Readonly<ApiEdgeConfig>;
  app: Express;
  /** What runs beside the routes (createApp's `background`): the sweepers, the lease books, the key cache. */
  background: EdgeBackground;
  server: Server;
  /** http://127.0.0.1:<port> of the listening app. */
  baseUrl: string;
  /** A new account with `balance` (currency units) and a key; returns the key secret. */
  newCustomer(opts?: { balance?: number; models?: string[] | null; groupName?: string }): Promise<{ accountId: string; keyId: string; key: string }>;
  /** A BullMQ queue handle on the harness prefix, to look at jobs. */
  queue(pool: Pool): TaskQueue;
  /** The unit price (minor units) the tests should expect for a billing key. */
  priceOf(key: string): Promise<bigint>;
  close(): Promise<void>;
}

/**
 * createApp with real Postgres (fresh database, real migrations) and real Redis (unique prefix), listening on
 * port 0. Deps can be overridden (e.g. a failing producer).
 */
export async function startEdgeHarness(
  opts: {
    env?: Record<string, string>;
    deps?: Partial<AppDeps>;
    /** A second edge of the same fleet: its database and Redis prefix, which this harness's close() leaves to it. */
    beside?: EdgeHarness;
  } = {},
): Promise<EdgeHarness> {
  const own = !opts.beside;
  const db = opts.beside?.db ?? (await createTestDatabase('gmg_edge'));
  const prefix = opts.beside?.prefix ?? uniqueRedisPrefix();
  const redis = createRedis(TEST_REDIS_TARGET, 'client');
  const producers = new Producers(redis, prefix);
  const pricesFile = path.join(REPO_ROOT, 'infra/prices.json');
  if (own && existsSync(pricesFile)) await loadPrices(db.dataSource, pricesFile);
  const priceRepo = new PriceRepository(db.dataSource);
  const known = await priceRepo.table();
  await priceRepo.upsertMany(
    Object.entries(TEST_PRICES)
      .filter(([k]) => !known.has(k) && !known.has(k.split('@')[0]))
      .map(([key, units]) => ({ key, unitPrice: toMinor(units), description: 'api-edge test price' })),
  );
  // Never the repository's .data/results: the edge sweeps its result store.
  const resultDir = path.join(tmpdir(), `gmg-edge-results-${prefix.replace(/[^A-Za-z0-9_-]/g, '_')}`);
  const config = loadApiEdgeConfig({
    ADMIN_TOKEN: 'test-admin-token-0123456789abcdef',
    RESULT_SIGNING_KEY: 'test-result-signing-key-0123456789abcdef',
    RESULT_STORE_URL: resultDir,
    QUEUE_PREFIX: prefix,
    PUBLIC_BASE_URL: 'http://127.0.0.1:8080',
    PRICE_CACHE_TTL_MS: '0',
    AUTH_CACHE_TTL_MS: '2000',
    ...opts.env,
  });
  const logger = createLogger({ service: 'api-edge-test', level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const { app, background } = createApp({ config, logger, dataSource: db.dataSource, redis, producers, ...opts.deps });
  const server: Server = await new Promise((resolve) => {
    const s = appServer(app, config).listen(0, '127.0.0.1', () => resolve(s)); // the server main.ts runs (http/app-server.ts)
  });
  const timers = startEdgeTimers(background); // as main.ts does: the sweepers run on their timers
  const addr = server.address();
  const baseUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const queues: TaskQueue[] = [];

  return {
    db,
    redis,
    prefix,
    config,
    app,
    background,
    server,
    baseUrl,
    async newCustomer(c = {}) {
      const accounts = new AccountRepository(db.dataSource);
      if (c.groupName) {
        const groups = new GroupRepository(db.dataSource);
        if (!(await groups.get(c.groupName))) await groups.upsert({ name: c.groupName, priceRatio: 1, models: null, rpsLimit: null, inflightLimit: null });
      }
      const account = await accounts.create({ name: `edge-test-${Date.now()}`, groupName: c.groupName });
      if (c.balance && c.balance > 0) await accounts.topup(account.id, toMinor(c.balance), { reason: 'test' });
      const { key, secret } = await new ApiKeyRepository(db.dataSource).create({ accountId: account.id, name: 'test', models: c.models ?? null });
      return { accountId: account.id, keyId: key.id, key: secret };
    },
    queue(pool) {
      const q = createTaskQueue(pool, redis, prefix);
      queues.push(q);
      return q;
    },
    async priceOf(key) {
      const t = await priceRepo.table();
      const p = t.get(key);
      if (p === undefined) throw new Error(`no test price ${key}`);
      return p;
    },
    async close() {
      // closeAllConnections first: close() alone waits for every open connection (a client's keep-alive socket, a
      // request whose client went away) to end by itself
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      await timers.stop();
      await Promise.all(queues.map((q) => q.close()));
      await producers.close();
      if (own) await deleteRedisPrefix(redis, prefix);
      await redis.quit();
      if (own) await db.drop();
      rmSync(resultDir, { recursive: true, force: true });
    },
  };
}
