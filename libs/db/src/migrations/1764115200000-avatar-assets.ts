import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Avatar assets (spec 2.5, 4.8) and partial captures.
 * - `asset_groups`, `avatar_assets`: owned by an account; an asset is written at submit (`Pending`, with the task
 *   that reviews it) and decided by the avatar worker (`Active` or `Rejected` with a reason), which also stores the
 *   upstream's own reference and the channel that reviewed it (motion-2.0 is pinned to that channel).
 * - `tasks.capture_amount`: set by the terminal transition when less than the hold is to be captured (per-asset
 *   billing); settlement captures it and releases the rest. NULL means the whole price.
 */
export class AvatarAssets1764115200000 implements MigrationInterface {
  name = 'AvatarAssets1764115200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks ADD COLUMN capture_amount bigint NULL`);
    await q.query(`
      ALTER TABLE tasks ADD CONSTRAINT tasks_capture_amount_check
      CHECK (capture_amount IS NULL OR (capture_amount >= 0 AND capture_amount <= price))`);
    await q.query(`
      CREATE TABLE asset_groups (
        id text PRIMARY KEY CHECK (id LIKE 'group\\_%'),
        account_id uuid NOT NULL REFERENCES accounts(id),
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        auto_created boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX asset_groups_account_idx ON asset_groups (account_id, created_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE avatar_assets (
        id text PRIMARY KEY CHECK (id LIKE 'asset\\_%'),
        account_id uuid NOT NULL REFERENCES accounts(id),
        group_id text NOT NULL REFERENCES asset_groups(id),
        task_id text NOT NULL REFERENCES tasks(id),
        position integer NOT NULL CHECK (position >= 0),
        asset_type text NOT NULL CHECK (asset_type IN ('Image','Video','Audio')),
        name text NOT NULL,
        url text NOT NULL,
        project_name text NOT NULL,
        status text NOT NULL DEFAULT 'Pending' CHECK (status IN ('Pending','Active','Rejected')),
        reason text,
        channel_id uuid,
        upstream_asset_id text,
        upstream_asset_url text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT avatar_assets_task_position_unique UNIQUE (task_id, position)
      )`);
    await q.query(`CREATE INDEX avatar_assets_account_idx ON avatar_assets (account_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX avatar_assets_group_idx ON avatar_assets (group_id, created_at DESC, id DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS avatar_assets`);
    await q.query(`DROP TABLE IF EXISTS asset_groups`);
    await q.query(`ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_capture_amount_check`);
    await q.query(`ALTER TABLE tasks DROP COLUMN IF EXISTS capture_amount`);
  }
}
