import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Several keys per channel (issue 37 item 1): `channel_keys`, a new table (a channel's vendor keys, each with its own
 * weight and health, item 2). Expand only: a channel with no row here keeps using `channels.api_key` as before, so
 * the previous release and old rows go on working. The columns added to existing tables: ChannelHealth1765600100000.
 */
export class ChannelKeys1765600000000 implements MigrationInterface {
  name = 'ChannelKeys1765600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS channel_keys (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      channel_id uuid NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
      secret text NOT NULL,
      weight integer NOT NULL DEFAULT 1,
      status text NOT NULL DEFAULT 'active',
      cooling_until timestamptz NULL,
      disabled_reason text NULL,
      last_error text NULL,
      last_error_at timestamptz NULL,
      cool_level integer NOT NULL DEFAULT 0,
      next_probe_at timestamptz NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS channel_keys_channel_idx ON channel_keys (channel_id, created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS channel_keys`);
  }
}
