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

const toAccount = (r: Row): AccountRecord => ({
  id: r.id as string,
  name: r.name as string,
  groupName: r.group_name as string,
  available: BigInt(r.available as string),
  held: BigInt(r.held as string),
  spent: BigInt(r.spent as string),
  createdAt: new Date(r.created_at as string),
});

export class AccountRepository {
  constructor(private readonly ds: DataSource) {}

  async create(input: { name: string; groupName?: string; id?: string }): Promise<AccountRecord> {
    const rows: Row[] = await this.ds.query(
      `INSERT INTO accounts (id, name, group_name) VALUES (COALESCE($1::uuid, gen_random_uuid()), $2, $3) RETURNING *`,
      [input.id ?? null, input.name, input.groupName ?? 'default'],
    );
    return toAccount(rows[0]);
  }

  async get(id: string): Promise<AccountRecord | null> {
    const rows: Row[] = await this.ds.query(`SELECT * FROM accounts WHERE id = $1`, [id]);
    return rows[0] ? toAccount(rows[0]) : null;
  }

  /** Adds money: a `topup` ledger entry and available += amount, in one transaction. */
  async topup(id: string, amount: bigint, meta: Record<string, unknown> = {}): Promise<AccountRecord | null> {
    if (amount <= 0n) throw new RangeError('topup amount must be positive');
    return this.ds.transaction(async (m: EntityManager) => {
      const list = rowsOf(await m.query(
        `UPDATE accounts SET available = available + $2, updated_at = now() WHERE id = $1 RETURNING *`,
        [id, amount.toString()],
      ));
      if (!list[0]) return null;
      await m.query(`INSERT INTO ledger_entries (account_id, kind, amount, meta) VALUES ($1,'topup',$2,$3)`, [
        id,
        amount.toString(),
        JSON.stringify(meta),
      ]);
      return toAccount(list[0]);
    });
  }
}
