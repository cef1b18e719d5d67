import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Counter rows per kind: a transaction adds to the row of its server backend's shard (see the trigger). */
const SHARDS = 64;

/**
 * Money gauges without reading the ledger: `ledger_totals` keeps the sum and the count of ledger entries per kind,
 * maintained by a statement-level trigger (one upsert per inserting statement and kind, not per entry). The
 * counters are sharded by the server backend (`pg_backend_pid() % 64`): a backend runs one transaction at a time, so
 * concurrent transactions rarely share a counter row and never queue the fleet on one (the hot-row problem the
 * holds have). Rows are upserted in kind order, so two statements never lock the same rows in opposite orders.
 * The gauge reads at most kinds × 64 rows (OpsStatsRepository). The ledger stays append-only; archived
 * partitions keep counting (the totals are all-time).
 *
 * The backfill reads the whole ledger once, in the transaction that creates the trigger: inserts wait for it
 * (docs/operations.md, upgrade procedure: at 10 M entries this is seconds; run it off-peak on a bigger ledger).
 */
export class LedgerTotals1765100100000 implements MigrationInterface {
  name = 'LedgerTotals1765100100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE ledger_totals (
        kind text NOT NULL,
        shard integer NOT NULL,
        total bigint NOT NULL DEFAULT 0,
        entries bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (kind, shard)
      )`);
    await q.query(`
      CREATE FUNCTION ledger_totals_add() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO ledger_totals AS t (kind, shard, total, entries)
        SELECT kind, pg_backend_pid() % ${SHARDS}, sum(amount), count(*) FROM ledger_new GROUP BY kind ORDER BY kind
        ON CONFLICT (kind, shard) DO UPDATE SET total = t.total + EXCLUDED.total, entries = t.entries + EXCLUDED.entries;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER ledger_totals_add AFTER INSERT ON ledger_entries
      REFERENCING NEW TABLE AS ledger_new FOR EACH STATEMENT EXECUTE FUNCTION ledger_totals_add()`);
    await q.query(`
      INSERT INTO ledger_totals AS t (kind, shard, total, entries)
      SELECT kind, 0, sum(amount), count(*) FROM ledger_entries GROUP BY kind ORDER BY kind
      ON CONFLICT (kind, shard) DO UPDATE SET total = t.total + EXCLUDED.total, entries = t.entries + EXCLUDED.entries`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER ledger_totals_add ON ledger_entries`);
    await q.query(`DROP FUNCTION ledger_totals_add()`);
    await q.query(`DROP TABLE ledger_totals`);
  }
}
