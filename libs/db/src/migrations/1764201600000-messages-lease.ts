import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Messages protocol: a channel names the version header its upstream expects (the vendor's own is
 * `anthropic-version`); chat calls are task rows of pool `chat`; credit leases are the money an edge process holds
 * for an account and spends locally (docs/messages.md). A lease is `amount` held on the account (ledger `hold`
 * on the lease id); the calls it pays are captured from it in batches (`used`); closing it releases
 * `amount - used` (ledger `release` on the lease id). A lease its edge stops renewing expires and is closed by
 * any edge's sweeper.
 */
export class MessagesLease1764201600000 implements MigrationInterface {
  name = 'MessagesLease1764201600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE channels ADD COLUMN version_header text NOT NULL DEFAULT 'anthropic-version'`);
    await q.query(`CREATE INDEX tasks_chat_open_deadline_idx ON tasks (deadline_at) WHERE pool = 'chat' AND status IN ('pending','processing')`);
    await q.query(`
      CREATE TABLE credit_leases (
        id text PRIMARY KEY CHECK (id LIKE 'lease\\_%'),
        account_id uuid NOT NULL REFERENCES accounts(id),
        edge_id text NOT NULL,
        amount bigint NOT NULL CHECK (amount >= 0),
        used bigint NOT NULL DEFAULT 0 CHECK (used >= 0 AND used <= amount),
        status text NOT NULL DEFAULT 'active' CHECK (status IN ('active','closed')),
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        closed_at timestamptz
      )`);
    await q.query(`CREATE INDEX credit_leases_active_expiry_idx ON credit_leases (expires_at) WHERE status = 'active'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS credit_leases`);
    await q.query(`DROP INDEX IF EXISTS tasks_chat_open_deadline_idx`);
    await q.query(`ALTER TABLE channels DROP COLUMN IF EXISTS version_header`);
  }
}
