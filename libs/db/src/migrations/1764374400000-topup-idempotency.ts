import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A top-up sent with an Idempotency-Key credits once: the key is bound per account in the ledger entry's meta, and
 * this partial unique index makes a second entry under it impossible (AccountRepository.topupOnce).
 */
export class TopupIdempotency1764374400000 implements MigrationInterface {
  name = 'TopupIdempotency1764374400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE UNIQUE INDEX ledger_topup_idempotency_uidx ON ledger_entries (account_id, (meta->>'idempotency_key'))
      WHERE kind = 'topup' AND meta ? 'idempotency_key'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS ledger_topup_idempotency_uidx`);
  }
}
