import type { QueryRunner } from 'typeorm';

/**
 * CREATE INDEX CONCURRENTLY, safe to re-run: writes to the table go on while it builds (no SHARE lock for the whole
 * build, only brief waits for older transactions). A build that was interrupted (a killed Job, a lock timeout)
 * leaves an INVALID index behind that `IF NOT EXISTS` would keep: it is dropped and built again. The migration that
 * calls this declares `transaction = false` (CONCURRENTLY cannot run inside a transaction).
 */
export async function createIndexConcurrently(q: QueryRunner, name: string, definition: string): Promise<void> {
  const invalid = (await q.query(`SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1 AND NOT i.indisvalid`, [
    name,
  ])) as unknown[];
  if (invalid.length) await q.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
  await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name} ${definition}`);
}

/**
 * For `down`: TypeORM reverts a migration inside a transaction whatever its `transaction` flag, so CONCURRENTLY is
 * not available there; a plain DROP INDEX holds its exclusive lock only for the catalog change (no scan).
 */
export async function dropIndex(q: QueryRunner, name: string): Promise<void> {
  await q.query(`DROP INDEX IF EXISTS ${name}`);
}
