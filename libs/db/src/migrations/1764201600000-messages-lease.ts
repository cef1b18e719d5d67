import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Messages protocol: a channel names the version header its upstream expects (the vendor's own is
 * `anthropic-version`); chat calls are task rows of pool `chat`, found by the crash sweeper through this index.
 */
export class MessagesLease1764201600000 implements MigrationInterface {
  name = 'MessagesLease1764201600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE channels ADD COLUMN version_header text NOT NULL DEFAULT 'anthropic-version'`);
    await q.query(`CREATE INDEX tasks_chat_open_deadline_idx ON tasks (deadline_at) WHERE pool = 'chat' AND status IN ('pending','processing')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS tasks_chat_open_deadline_idx`);
    await q.query(`ALTER TABLE channels DROP COLUMN IF EXISTS version_header`);
  }
}
