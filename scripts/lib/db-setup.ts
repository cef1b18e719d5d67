import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { createMigrationDataSource, runMigrations } from '@gmg/db';

/** Creates the database named in `url` when it does not exist (connecting to the `postgres` maintenance db). */
export async function ensureDatabase(url: string): Promise<boolean> {
  const u = new URL(url);
  const name = decodeURIComponent(u.pathname.replace(/^\//, '')) || 'postgres';
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const c = new Client({ connectionString: admin.toString(), connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    const found = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return false;
    // Identifier, not a value: quoted and with embedded quotes doubled.
    await c.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    return true;
  } finally {
    await c.end();
  }
}

/**
 * Whether a Postgres server (or PgBouncer's admin console, `query` = 'SHOW VERSION') answers `query` at `url`; a
 * refused connection, a timeout, an authentication error or an error reply is `false`.
 */
export async function postgresAnswers(url: string, timeoutMs = 2000, query = 'SELECT 1'): Promise<boolean> {
  const c = new Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  c.on('error', () => undefined);
  try {
    await c.connect();
    await c.query(query);
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** Opens a DataSource, applies pending migrations, returns it (caller destroys it) and what was applied. */
export async function migrate(url: string): Promise<{ ds: DataSource; applied: string[] }> {
  const ds = createMigrationDataSource(url);
  await ds.initialize();
  try {
    return { ds, applied: await runMigrations(ds) };
  } catch (e) {
    await ds.destroy();
    throw e;
  }
}

/** `postgres://user:secret@host/db` → `postgres://user:***@host/db`, for logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<unparseable url>';
  }
}
