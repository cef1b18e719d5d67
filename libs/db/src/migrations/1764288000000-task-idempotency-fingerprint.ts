import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `tasks.idempotency_fingerprint`: the hash of the request that claimed `idempotency_key`. When the Redis record of a
 * key is lost, the database backstop answers a retry with the first task only if the request is the same; another
 * request under the same key is 422, as it is while Redis remembers it.
 */
export class TaskIdempotencyFingerprint1764288000000 implements MigrationInterface {
  name = 'TaskIdempotencyFingerprint1764288000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks ADD COLUMN idempotency_fingerprint text NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks DROP COLUMN IF EXISTS idempotency_fingerprint`);
  }
}
