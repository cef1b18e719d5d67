import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexConcurrently, dropIndex } from './concurrent-index';

/**
 * Usage for operators and customers (issue 37 item 6; docs/management-api.md "Usage"): a rollup of settled tasks and
 * chat calls per UTC hour and per UTC day, per (account, key, model, channel), maintained by a bounded, idempotent
 * job on the billing sweep's beat (UsageRepository.rollup) — never by the settle statements, so the money path gains
 * no contended counter row. `GET /api/usage` reads only these tables (docs/benchmarks.md, "Usage").
 * - `usage_hourly`, `usage_daily`: counts, failures, spend (the ledger's captures) and one sparse histogram of
 *   durations, tasks' and chat calls' (`ms`: bigint[], each element `bucket << 32 | count`, sorted; bucket 0 holds
 *   task durations under 10 ms, bucket i in 1..63 those in [10·1.25^(i-1), 10·1.25^i) ms, and 64 + i the same for
 *   chat calls: one unnest and two shifts, no parsing, to read it);
 *   `channel_id` is the zero uuid for a task no channel served (the primary key needs a value);
 * - `usage_rollup_state`: the one watermark row, the (settled_at, id) of the last task rolled up;
 * - `tasks_settled_keyset_idx`: the job's page order, partial on settled rows, built CONCURRENTLY.
 * Expand only: new tables, an index built CONCURRENTLY, a function.
 */
export class UsageRollup1765800000000 implements MigrationInterface {
  name = 'UsageRollup1765800000000';
  transaction = false as const;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS usage_hourly (
        bucket timestamptz NOT NULL,
        account_id uuid NOT NULL,
        api_key_id uuid NOT NULL,
        model text NOT NULL,
        channel_id uuid NOT NULL,
        tasks integer NOT NULL DEFAULT 0,
        task_failures integer NOT NULL DEFAULT 0,
        chat_calls integer NOT NULL DEFAULT 0,
        chat_failures integer NOT NULL DEFAULT 0,
        spend bigint NOT NULL DEFAULT 0,
        ms bigint[] NOT NULL DEFAULT '{}',
        PRIMARY KEY (account_id, bucket, api_key_id, model, channel_id)
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS usage_hourly_bucket_idx ON usage_hourly (bucket)`);
    // the daily table has the hourly one's shape: columns, defaults, primary key and the bucket index
    await q.query(`CREATE TABLE IF NOT EXISTS usage_daily (LIKE usage_hourly INCLUDING ALL)`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS usage_rollup_state (
        id integer PRIMARY KEY CHECK (id = 1),
        settled_at timestamptz NOT NULL,
        task_id text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`INSERT INTO usage_rollup_state (id, settled_at, task_id) VALUES (1, '-infinity', '') ON CONFLICT (id) DO NOTHING`);
    // the sum of two sparse histograms (each element: bucket << 32 | count)
    await q.query(`
      CREATE OR REPLACE FUNCTION usage_hist_add(a bigint[], b bigint[]) RETURNS bigint[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT COALESCE(array_agg((k << 32) | n ORDER BY k), '{}'::bigint[])
        FROM (SELECT x >> 32 AS k, sum(x & 4294967295)::bigint AS n FROM unnest(a || b) x GROUP BY 1) s
      $$`);
    await createIndexConcurrently(q, 'tasks_settled_keyset_idx', 'ON tasks (settled_at, id) WHERE settled_at IS NOT NULL');
  }

  async down(q: QueryRunner): Promise<void> {
    await dropIndex(q, 'tasks_settled_keyset_idx');
    await q.query(`DROP FUNCTION IF EXISTS usage_hist_add(bigint[], bigint[])`);
    await q.query(`DROP TABLE IF EXISTS usage_rollup_state`);
    await q.query(`DROP TABLE IF EXISTS usage_daily`);
    await q.query(`DROP TABLE IF EXISTS usage_hourly`);
  }
}
