import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { redisTargetOf, type RedisTarget } from '@gmg/config';
import { createDataSource, createMigrationDataSource, runMigrations } from '@gmg/db';

/** The server tests run against; CI and the dev machine have it at 127.0.0.1. */
export const TEST_PG_ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/**
 * TEST_DATABASE_POOL_URL (scripts/with-pgbouncer.sh sets it): a PgBouncer in transaction mode in front of that
 * server. Test databases are then created and migrated directly (as the migration Job does) and everything else —
 * the test's own data source, the services a test starts — goes through the pooler, as in production.
 */
const TEST_PG_POOL_URL = process.env.TEST_DATABASE_POOL_URL || undefined;

/**
 * How many random cases a money property test runs: `n` against Postgres itself, a quarter of it (at least 25) in the
 * second pass through PgBouncer (CI's with-pgbouncer step). That pass proves the properties hold on the pooled path
 * (transaction pooling, no session state); the depth of the random search is the direct pass's, and each pass draws
 * its own seed. The mutation tests (ledger.mutation.int.test.ts) keep their counts: they must find their bug.
 */
export const propertyRuns = (n: number): number => (TEST_PG_POOL_URL ? Math.max(25, Math.ceil(n / 4)) : n);
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/**
 * Set by the test set-up when TEST_REDIS_CLUSTER=1 (test/redis-cluster.setup.ts: a local 3-master cluster on free
 * ports): then TEST_REDIS_TARGET is that cluster, and every service startService starts with REDIS_URL =
 * TEST_REDIS_URL gets REDIS_CLUSTER_NODES too, so the same suites run on a standalone Redis and on a cluster.
 */
const TEST_REDIS_CLUSTER_NODES = process.env.TEST_REDIS_CLUSTER_NODES || undefined;
/** The Redis tests talk to: createRedis(TEST_REDIS_TARGET, ...). */
export const TEST_REDIS_TARGET: RedisTarget = TEST_REDIS_CLUSTER_NODES
  ? redisTargetOf({ REDIS_URL: TEST_REDIS_URL, REDIS_CLUSTER_NODES: TEST_REDIS_CLUSTER_NODES })
  : { kind: 'standalone', url: TEST_REDIS_URL };

export const uniqueSuffix = (): string => `${Date.now().toString(36)}${randomBytes(4).toString('hex')}`;

export interface TestDatabase {
  name: string;
  /** What services use (through PgBouncer when TEST_DATABASE_POOL_URL is set). */
  url: string;
  /** The server itself (migrations, admin statements). */
  directUrl: string;
  dataSource: DataSource;
  drop(): Promise<void>;
}

/** A fresh database with the real migrations applied. Call drop() in afterAll. */
export async function createTestDatabase(prefix = 'gmg_test'): Promise<TestDatabase> {
  const name = `${prefix}_${uniqueSuffix()}`;
  const admin = new Client({ connectionString: TEST_PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const withName = (base: string): string => {
    const u = new URL(base);
    u.pathname = `/${name}`;
    return u.toString();
  };
  const directUrl = withName(TEST_PG_ADMIN_URL);
  const url = TEST_PG_POOL_URL ? withName(TEST_PG_POOL_URL) : directUrl;
  if (TEST_PG_POOL_URL) {
    const migrator = createMigrationDataSource(directUrl);
    await migrator.initialize();
    try {
      await runMigrations(migrator);
    } finally {
      await migrator.destroy();
    }
  }
  const dataSource = createDataSource({ url, poolSize: 5, applicationName: 'gmg-test' });
  await dataSource.initialize();
  if (!TEST_PG_POOL_URL) await runMigrations(dataSource);
  return {
    name,
    url,
    directUrl,
    dataSource,
    async drop() {
      if (dataSource.isInitialized) await dataSource.destroy();
      const c = new Client({ connectionString: TEST_PG_ADMIN_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** A unique BullMQ/Redis key prefix per test run so parallel runs never see each other's keys. */
export const uniqueRedisPrefix = (): string => `gmgtest:${uniqueSuffix()}`;
