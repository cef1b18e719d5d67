import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Counter rows per kind: a transaction adds to the row of its server backend's shard (see the trigger). */
const SHARDS = 64;
/** Ledger ids per backfill statement (a range of the primary key: an index range scan, a few hundred ms). */
const BACKFILL_BATCH = 50_000;

/**
 * Money gauges without reading the ledger: `ledger_totals` keeps the sum and the count of ledger entries per kind,
 * maintained by a statement-level trigger (one upsert per inserting statement and kind, not per entry). The
 * counters are sharded by the server backend (`pg_backend_pid() % 64`): a backend runs one transaction at a time, so
 * concurrent transactions rarely share a counter row and never queue the fleet on one (the hot-row problem the
 * holds have). Rows are upserted in kind order, so two statements never lock the same rows in opposite orders.
 * The gauge reads at most kinds × 64 rows (OpsStatsRepository). The ledger stays append-only; entries moved to
 * `ledger_archive` keep counting (the totals are all-time: they count inserts).
 *
 * The backfill never scans the ledger under a lock (issue 38; libs/db/src/migration-rules.test.ts). It first read
 * the whole ledger in the transaction that created the trigger, so every hold and settlement of the fleet waited for
 * that scan. Now (`transaction = false`, each statement its own transaction):
 * 1. one short statement creates the trigger and records the high-water mark `max(id)` of `ledger_entries` (an
 *    index lookup). CREATE TRIGGER waits for the inserts in flight, so every entry with an id above the mark is
 *    inserted after the trigger exists and is counted by it; every entry at or below it was inserted before and is
 *    counted by the backfill — each exactly once;
 * 2. batched-backfill: keyset batches of 50,000 ids up to the mark, each one statement that adds the batch's sums
 *    and moves `ledger_totals_backfill.done` in the same transaction (an interrupted run resumes where it stopped,
 *    never counting a batch twice). Reads only: inserts go on meanwhile;
 * 3. the progress row is dropped when done.
 * Databases that applied the earlier, one-transaction version hold the same totals: nothing changes for them.
 */
export class LedgerTotals1765100100000 implements MigrationInterface {
  name = 'LedgerTotals1765100100000';
  transaction = false as const;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS ledger_totals (
        kind text NOT NULL,
        shard integer NOT NULL,
        total bigint NOT NULL DEFAULT 0,
        entries bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (kind, shard)
      )`);
    await q.query(`
      CREATE OR REPLACE FUNCTION ledger_totals_add() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO ledger_totals AS t (kind, shard, total, entries)
        SELECT kind, pg_backend_pid() % ${SHARDS}, sum(amount), count(*) FROM ledger_new GROUP BY kind ORDER BY kind
        ON CONFLICT (kind, shard) DO UPDATE SET total = t.total + EXCLUDED.total, entries = t.entries + EXCLUDED.entries;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TABLE IF NOT EXISTS ledger_totals_backfill (hwm bigint NOT NULL, done bigint NOT NULL)`);
    // 1. the trigger and the mark, in one statement (one transaction); a re-run finds the trigger and leaves both
    await q.query(`
      DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'ledger_totals_add' AND tgrelid = 'ledger_entries'::regclass) THEN
          CREATE TRIGGER ledger_totals_add AFTER INSERT ON ledger_entries
            REFERENCING NEW TABLE AS ledger_new FOR EACH STATEMENT EXECUTE FUNCTION ledger_totals_add();
          INSERT INTO ledger_totals_backfill (hwm, done) SELECT COALESCE((SELECT max(id) FROM ledger_entries), 0), 0;
        END IF;
      END $$`);
    // 2. batched-backfill: keyset batches along the primary key, each moving the progress row in its own transaction
    for (let i = 0; i < 1_000_000; i++) {
      const rows = (await q.query(`
        WITH b AS (SELECT hwm, done, LEAST(hwm, done + ${BACKFILL_BATCH}) AS upto FROM ledger_totals_backfill FOR UPDATE),
        batch AS (
          SELECT l.kind, sum(l.amount) AS total, count(*) AS entries FROM b, ledger_entries l
          WHERE l.id > b.done AND l.id <= b.upto GROUP BY l.kind ORDER BY l.kind
        ), added AS (
          INSERT INTO ledger_totals AS t (kind, shard, total, entries) SELECT kind, 0, total, entries FROM batch
          ON CONFLICT (kind, shard) DO UPDATE SET total = t.total + EXCLUDED.total, entries = t.entries + EXCLUDED.entries
          RETURNING 1
        )
        UPDATE ledger_totals_backfill SET done = b.upto FROM b
        RETURNING ledger_totals_backfill.done >= ledger_totals_backfill.hwm AS finished`)) as unknown;
      const finished = (Array.isArray(rows) && Array.isArray(rows[0]) ? (rows[0] as Array<{ finished: boolean }>) : (rows as Array<{ finished: boolean }>))[0];
      if (!finished || finished.finished) break;
    }
    // 3. done: the progress row goes
    await q.query(`DROP TABLE IF EXISTS ledger_totals_backfill`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS ledger_totals_backfill`);
    await q.query(`DROP TRIGGER IF EXISTS ledger_totals_add ON ledger_entries`);
    await q.query(`DROP FUNCTION IF EXISTS ledger_totals_add()`);
    await q.query(`DROP TABLE IF EXISTS ledger_totals`);
  }
}
