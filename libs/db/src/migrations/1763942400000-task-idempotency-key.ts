import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `tasks.idempotency_key`: the client's Idempotency-Key, unique per API key while it is kept (24 h; the billing
 * sweeper clears older ones). The Redis idempotency record answers replays; this constraint is the backstop that
 * makes a second task (and a second charge) impossible even when Redis has lost that record.
 */
export class TaskIdempotencyKey1763942400000 implements MigrationInterface {
  name = 'TaskIdempotencyKey1763942400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks ADD COLUMN idempotency_key text NULL`);
    await q.query(`CREATE UNIQUE INDEX tasks_idempotency_uidx ON tasks (api_key_id, idempotency_key) WHERE idempotency_key IS NOT NULL`);
    await q.query(`CREATE INDEX tasks_idempotency_created_idx ON tasks (created_at) WHERE idempotency_key IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS tasks_idempotency_created_idx`);
    await q.query(`DROP INDEX IF EXISTS tasks_idempotency_uidx`);
    await q.query(`ALTER TABLE tasks DROP COLUMN IF EXISTS idempotency_key`);
  }
}
