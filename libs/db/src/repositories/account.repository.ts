import { rowsOf, type Row } from './sql';
import type { DataSource, EntityManager } from 'typeorm';

export interface AccountRecord {
  id: string;
  name: string;
  groupName: string;
  available: bigint;
  held: bigint;
  spent: bigint;
  createdAt: Date;
}

export const toAccount = (r: Row): AccountRecord => ({
  id: r.id as string,
  name: r.name as string,
  groupName: r.group_name as string,
  available: BigInt(r.available as string),
  held: BigInt(r.held as string),
  spent: BigInt(r.spent as string),
  createdAt: new Date(r.created_at as string),
});

/** The columns toAccount reads (never `*`): a column added to it is added here. */
export const ACCOUNT_COLUMNS = 'id, name, group_name, available, held, spent, created_at';
const COLUMNS = ACCOUNT_COLUMNS;

export class AccountRepository {
  constructor(private readonly ds: DataSource) {}

  async create(input: { name: string; groupName?: string; id?: string }): Promise<AccountRecord> {
    const rows: Row[] = await this.ds.query(
      `INSERT INTO accounts (id, name, group_name) VALUES (COALESCE($1::uuid, gen_random_uuid()), $2, $3) RETURNING ${COLUMNS}`,
      [input.id ?? null, input.name, input.groupName ?? 'default'],
    );
    return toAccount(rows[0]);
  }

  async get(id: string): Promise<AccountRecord | null> {
    const rows: Row[] = await this.ds.query(`SELECT ${COLUMNS} FROM accounts WHERE id = $1`, [id]);
    return rows[0] ? toAccount(rows[0]) : null;
  }

  /** Adds money: a `topup` ledger entry and available += amount, in one transaction. */
  async topup(id: string, amount: bigint, meta: Record<string, unknown> = {}): Promise<AccountRecord | null> {
    if (amount <= 0n) throw new RangeError('topup amount must be positive');
    return this.ds.transaction(async (m: EntityManager) => {
      const list = rowsOf(
        await m.query(`UPDATE accounts SET available = available + $2, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`, [id, amount.toString()]),
      );
      if (!list[0]) return null;
      await m.query(`INSERT INTO ledger_entries (account_id, kind, amount, meta) VALUES ($1,'topup',$2,$3)`, [id, amount.toString(), JSON.stringify(meta)]);
      return toAccount(list[0]);
    });
  }

  /**
   * A top-up under an Idempotency-Key: the first call credits, a retry with the same key and amount credits nothing
   * and answers the account as it is (`replayed`), the same key with another amount is `mismatch`. The key is
   * bound in the ledger itself (a unique index over the account and `meta.idempotency_key` of topups), so this holds
   * across replicas and restarts. Null when the account does not exist.
   */
  async topupOnce(
    id: string,
    amount: bigint,
    idempotencyKey: string,
    meta: Record<string, unknown> = {},
  ): Promise<{ account: AccountRecord; replayed: boolean } | 'mismatch' | null> {
    if (amount <= 0n) throw new RangeError('topup amount must be positive');
    return this.ds.transaction(async (m: EntityManager) => {
      const locked = rowsOf(await m.query(`SELECT id FROM accounts WHERE id = $1 FOR UPDATE`, [id]));
      if (!locked[0]) return null;
      const inserted = rowsOf(
        await m.query(
          `INSERT INTO ledger_entries (account_id, kind, amount, meta) VALUES ($1, 'topup', $2, $3)
         ON CONFLICT (account_id, (meta->>'idempotency_key')) WHERE kind = 'topup' AND meta ? 'idempotency_key' DO NOTHING
         RETURNING id`,
          [id, amount.toString(), JSON.stringify({ ...meta, idempotency_key: idempotencyKey })],
        ),
      );
      if (inserted.length === 0) {
        const [first] = rowsOf(
          await m.query(`SELECT amount FROM ledger_entries WHERE account_id = $1 AND kind = 'topup' AND meta->>'idempotency_key' = $2`, [id, idempotencyKey]),
        );
        if (BigInt(first.amount as string) !== amount) return 'mismatch';
        const [current] = rowsOf(await m.query(`SELECT ${COLUMNS} FROM accounts WHERE id = $1`, [id]));
        return { account: toAccount(current), replayed: true };
      }
      const [updated] = rowsOf(
        await m.query(`UPDATE accounts SET available = available + $2, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`, [id, amount.toString()]),
      );
      return { account: toAccount(updated), replayed: false };
    });
  }
}
