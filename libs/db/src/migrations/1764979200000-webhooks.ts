import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Signed webhooks (docs/webhooks.md): the optional `callback_url` of a task (read only by the webhook delivery,
 * never by the poll path), the per-account signing secret, and one row per delivery attempt.
 */
export class Webhooks1764979200000 implements MigrationInterface {
  name = 'Webhooks1764979200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks ADD COLUMN callback_url text NULL`);
    await q.query(`
      CREATE TABLE webhook_secrets (
        account_id uuid PRIMARY KEY REFERENCES accounts(id),
        secret text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        rotated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE webhook_deliveries (
        id bigserial PRIMARY KEY,
        account_id uuid NOT NULL REFERENCES accounts(id),
        task_id text NOT NULL,
        event text NOT NULL,
        delivery_id text NOT NULL,
        attempt integer NOT NULL,
        url text NOT NULL,
        status_code integer NULL,
        error text NULL,
        succeeded boolean NOT NULL,
        duration_ms integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX webhook_deliveries_account_idx ON webhook_deliveries (account_id, id DESC)`);
    await q.query(`CREATE INDEX webhook_deliveries_task_idx ON webhook_deliveries (task_id, event) WHERE succeeded`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS webhook_deliveries`);
    await q.query(`DROP TABLE IF EXISTS webhook_secrets`);
    await q.query(`ALTER TABLE tasks DROP COLUMN IF EXISTS callback_url`);
  }
}
