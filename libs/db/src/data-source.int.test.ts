import { createTestDatabase, type TestDatabase } from '@gmg/testing';
import { createDataSource, createMigrationDataSource, pendingMigrations } from './data-source';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase('gmg_ds');
});
afterAll(async () => {
  await db.drop();
});

describe('createDataSource limits (PG_* environment)', () => {
  it('runs migrations with no statement timeout, whatever the database default', async () => {
    await db.dataSource.query(`ALTER DATABASE "${db.name}" SET statement_timeout = '7s'`);
    const m = createMigrationDataSource(db.directUrl);
    await m.initialize();
    try {
      expect(await m.query('SHOW statement_timeout')).toEqual([{ statement_timeout: '0' }]);
      expect(await m.query('SHOW lock_timeout')).toEqual([{ lock_timeout: '5s' }]);
    } finally {
      await m.destroy();
    }
  });

  it('fails a statement past its timeout and a query that waits past the connect timeout for a pooled connection', async () => {
    // Start-up parameters apply on a direct connection (through PgBouncer its connect_query sets the limits).
    const direct = createDataSource({ url: db.directUrl, poolSize: 1, statementTimeoutMs: 600, lockTimeoutMs: 200 });
    await direct.initialize();
    try {
      // the server's own message: it cancelled the statement (a 5 s sleep cannot end any other way with this error)
      await expect(direct.query('SELECT pg_sleep(5)')).rejects.toThrow(/statement timeout/);
      expect(await direct.query('SHOW lock_timeout')).toEqual([{ lock_timeout: '200ms' }]);
    } finally {
      await direct.destroy();
    }
    const ds = createDataSource({ url: db.url, poolSize: 1, connectTimeoutMs: 100 });
    await ds.initialize();
    try {
      // Through PgBouncer (CI's second pass) the server connection carries the pooler's limits (connect_query).
      if (process.env.TEST_DATABASE_POOL_URL) expect(await ds.query('SHOW statement_timeout')).toEqual([{ statement_timeout: '30s' }]);
      // The one connection busy for 2 s: the next query gives up after the connect timeout instead of waiting.
      // Which ends first is the assertion: the waiting query's timeout, before the busy query frees the connection.
      const busy = ds.query('SELECT pg_sleep(2)');
      const first = await Promise.race([
        busy.then(() => 'the busy query ended first: the second one waited for its connection'),
        ds.query('SELECT 1').then(
          () => 'answered',
          (e: Error) => e.message,
        ),
      ]);
      expect(first).toMatch(/timeout/i);
      await busy;
    } finally {
      await ds.destroy();
    }
  });

  it('knows no pending migration once the migrations ran, and lists them on an empty database', async () => {
    expect(await pendingMigrations(db.dataSource)).toEqual([]);
    const empty = await createTestDatabase('gmg_ds_empty');
    try {
      await empty.dataSource.query('DROP TABLE migrations');
      const pending = await pendingMigrations(empty.dataSource);
      expect(pending.length).toBe(empty.dataSource.migrations.length);
      expect(pending[0]).toMatch(/^InitialSchema/);
    } finally {
      await empty.drop();
    }
  });
});
