import type { DataSource } from 'typeorm';

/** Readiness probe: one round trip to Postgres; rejects when the pool cannot reach it. */
export async function pingDatabase(ds: DataSource): Promise<void> {
  await ds.query('SELECT 1');
}
