import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Channel health that persists (issue 37 item 2) and the key a task was submitted with (item 1). Expand only:
 * - health columns on `channels` (constant defaults or nullable: Postgres adds them without a rewrite);
 * - `tasks.channel_key_id`: nullable, in no index (the row's hot updates stay heap-only; migration
 *   1765500000000-tasks-hot-updates), written once at submit. No foreign key: removing a key must not scan tasks.
 */
export class ChannelHealth1765600100000 implements MigrationInterface {
  name = 'ChannelHealth1765600100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE channels
      ADD COLUMN IF NOT EXISTS status text NOT NULL DEFAULT 'active',
      ADD COLUMN IF NOT EXISTS cooling_until timestamptz NULL,
      ADD COLUMN IF NOT EXISTS disabled_reason text NULL,
      ADD COLUMN IF NOT EXISTS last_error text NULL,
      ADD COLUMN IF NOT EXISTS last_error_at timestamptz NULL,
      ADD COLUMN IF NOT EXISTS cool_level integer NOT NULL DEFAULT 0,
      ADD COLUMN IF NOT EXISTS next_probe_at timestamptz NULL`);
    await q.query(`ALTER TABLE tasks ADD COLUMN IF NOT EXISTS channel_key_id uuid NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks DROP COLUMN IF EXISTS channel_key_id`);
    await q.query(`ALTER TABLE channels DROP COLUMN IF EXISTS status, DROP COLUMN IF EXISTS cooling_until, DROP COLUMN IF EXISTS disabled_reason,
      DROP COLUMN IF EXISTS last_error, DROP COLUMN IF EXISTS last_error_at, DROP COLUMN IF EXISTS cool_level, DROP COLUMN IF EXISTS next_probe_at`);
  }
}
