import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Real upstreams (issue 34): a channel maps a public model id to the vendor's own name for it (`model_map`, absent
 * keys go upstream under their own name) and carries protocol settings (`settings`: extra headers, fixed extra body
 * parameters, protocol options such as a region base). Expand only: two columns with constant defaults, which
 * Postgres adds without rewriting the table; the previous release never reads them.
 */
export class ChannelModelMap1765400000000 implements MigrationInterface {
  name = 'ChannelModelMap1765400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE channels ADD COLUMN IF NOT EXISTS model_map jsonb NOT NULL DEFAULT '{}'::jsonb`);
    await q.query(`ALTER TABLE channels ADD COLUMN IF NOT EXISTS settings jsonb NOT NULL DEFAULT '{}'::jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE channels DROP COLUMN IF EXISTS settings, DROP COLUMN IF EXISTS model_map`);
  }
}
