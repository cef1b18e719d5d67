import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexConcurrently, dropIndex } from './concurrent-index';

/**
 * API keys with a spending cap, an end date and rotation (issue 37 item 5, docs/management-api.md "Keys").
 * - `api_keys`: `max_spend` (minor units; null = no cap) per `spend_window` (`day`, `month` UTC, or null = the key's
 *   life), `expires_at`, and the secret a rotation replaced (`previous_key_hash`, valid until `previous_valid_until`);
 * - `api_key_spend`: a key's running spend per period (`life`, `YYYY-MM-DD`, `YYYY-MM`), raised by the hold statement
 *   only while it stays within the cap and given back by settlement for what a task did not capture;
 * - `tasks.spend_period`: the period a capped key's task was counted in (its refund goes back there).
 * Expand only: nullable columns without defaults (no rewrite), a new table, an index built CONCURRENTLY.
 */
export class ApiKeyCaps1765637000000 implements MigrationInterface {
  name = 'ApiKeyCaps1765637000000';
  transaction = false as const;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS max_spend bigint NULL, ADD COLUMN IF NOT EXISTS spend_window text NULL,
      ADD COLUMN IF NOT EXISTS expires_at timestamptz NULL, ADD COLUMN IF NOT EXISTS previous_key_hash text NULL,
      ADD COLUMN IF NOT EXISTS previous_valid_until timestamptz NULL, ADD COLUMN IF NOT EXISTS rotated_at timestamptz NULL`);
    await q.query(`ALTER TABLE tasks ADD COLUMN IF NOT EXISTS spend_period text NULL`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS api_key_spend (
        api_key_id uuid NOT NULL,
        period text NOT NULL,
        spent bigint NOT NULL DEFAULT 0,
        cap bigint NOT NULL,
        PRIMARY KEY (api_key_id, period)
      )`);
    await createIndexConcurrently(q, 'api_keys_previous_hash_idx', 'ON api_keys (previous_key_hash) WHERE previous_key_hash IS NOT NULL');
  }

  async down(q: QueryRunner): Promise<void> {
    await dropIndex(q, 'api_keys_previous_hash_idx');
    await q.query(`DROP TABLE IF EXISTS api_key_spend`);
    await q.query(`ALTER TABLE tasks DROP COLUMN IF EXISTS spend_period`);
    await q.query(`ALTER TABLE api_keys DROP COLUMN IF EXISTS max_spend, DROP COLUMN IF EXISTS spend_window, DROP COLUMN IF EXISTS expires_at,
      DROP COLUMN IF EXISTS previous_key_hash, DROP COLUMN IF EXISTS previous_valid_until, DROP COLUMN IF EXISTS rotated_at`);
  }
}
