import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A chat call paid from a credit lease is written `processing` with its lease id before its first byte reaches
 * the client (docs/messages.md, "Crash"), and its cost so far is journalled on it while it runs. Closing the lease
 * (its edge shut down, or a sweeper after the edge died) charges the calls still open on it what they journalled:
 * an edge crash no longer leaves a call uncharged.
 */
export class ChatCallLease1765080000000 implements MigrationInterface {
  name = 'ChatCallLease1765080000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks ADD COLUMN lease_id text NULL`);
    await q.query(`CREATE INDEX tasks_chat_open_lease_idx ON tasks (lease_id) WHERE lease_id IS NOT NULL AND status IN ('pending','processing')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS tasks_chat_open_lease_idx`);
    await q.query(`ALTER TABLE tasks DROP COLUMN IF EXISTS lease_id`);
  }
}
