import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexConcurrently, dropIndex } from './concurrent-index';

/**
 * Ledger retention (docs/operations.md, "Retention"): the ledger is kept, never deleted — entries leave
 * `ledger_entries` only into `ledger_archive`, the same row under the same id.
 * - A task's entries move with the task, in the transaction that moves it to `tasks_archive` (RetentionRepository):
 *   the hot ledger holds what the `tasks` table holds, so it stays as small as TASK_RETENTION_DAYS keeps `tasks`.
 * - Entries of no task (top-ups, adjustments) and of closed credit leases move after LEDGER_RETENTION_DAYS, oldest
 *   first along a new partial index on `created_at` (only those rows: a few per account and lease).
 * The append-only trigger now lets a DELETE through only for a row whose identical copy is already in
 * `ledger_archive` (same id, account, task, kind and amount): an UPDATE, or a DELETE of a row not archived first,
 * still raises. `ledger_totals` counts inserts into `ledger_entries` only, so the all-time sums do not move.
 * Expand only: a new table, a function body replaced (the previous release never deletes ledger rows) and an index
 * built CONCURRENTLY.
 */
export class LedgerArchive1765300000000 implements MigrationInterface {
  name = 'LedgerArchive1765300000000';
  transaction = false as const;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS ledger_archive (
      id bigint PRIMARY KEY,
      account_id uuid NOT NULL,
      task_id text,
      kind text NOT NULL,
      amount bigint NOT NULL,
      meta jsonb,
      created_at timestamptz NOT NULL,
      archived_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS ledger_archive_account_idx ON ledger_archive (account_id, created_at)`);
    await q.query(`
      CREATE OR REPLACE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND EXISTS (
          SELECT 1 FROM ledger_archive a
          WHERE a.id = OLD.id AND a.account_id = OLD.account_id AND a.task_id IS NOT DISTINCT FROM OLD.task_id
            AND a.kind = OLD.kind AND a.amount = OLD.amount) THEN
          RETURN OLD;
        END IF;
        RAISE EXCEPTION 'ledger_entries is append-only (an entry leaves it only into ledger_archive)';
      END $$`);
    await createIndexConcurrently(q, 'ledger_untasked_created_idx', `ON ledger_entries (created_at) WHERE task_id IS NULL OR task_id LIKE 'lease\\_%'`);
  }

  async down(q: QueryRunner): Promise<void> {
    // the archive is money history: it is never dropped with rows in it (export them, and put them back by hand)
    const [{ n }] = (await q.query(`SELECT count(*)::int AS n FROM ledger_archive`)) as Array<{ n: number }>;
    if (n > 0) throw new Error(`ledger_archive holds ${n} entries: export them before reverting LedgerArchive1765300000000`);
    await dropIndex(q, 'ledger_untasked_created_idx');
    await q.query(`
      CREATE OR REPLACE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'ledger_entries is append-only'; END $$`);
    await q.query(`DROP TABLE IF EXISTS ledger_archive`);
  }
}
