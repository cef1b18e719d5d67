import { rowsOf, type Row } from './sql';
import type { DataSource } from 'typeorm';
import { hashApiKey, keyPrefix, newApiKeySecret } from '../ids';

/** What authentication yields: the key, its account and the effective group with its limits. */
export interface AuthPrincipal {
  keyId: string;
  accountId: string;
  /** Effective group: the key's, else the account's. */
  groupName: string;
  keyModels: string[] | null;
  groupModels: string[] | null;
  priceRatio: number;
  /** Effective limits: the key's override, else the group's; null = unlimited. */
  rpsLimit: number | null;
  inflightLimit: number | null;
}

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  name: string;
  prefix: string;
  models: string[] | null;
  groupName: string | null;
  rpsLimit: number | null;
  inflightLimit: number | null;
  status: 'active' | 'revoked';
  createdAt: Date;
  revokedAt: Date | null;
}

const toKey = (r: Row): ApiKeyRecord => ({
  id: r.id as string,
  accountId: r.account_id as string,
  name: r.name as string,
  prefix: r.prefix as string,
  models: (r.models as string[] | null) ?? null,
  groupName: (r.group_name as string | null) ?? null,
  rpsLimit: (r.rps_limit as number | null) ?? null,
  inflightLimit: (r.inflight_limit as number | null) ?? null,
  status: r.status as 'active' | 'revoked',
  createdAt: new Date(r.created_at as string),
  revokedAt: r.revoked_at ? new Date(r.revoked_at as string) : null,
});

/** The columns toApiKey reads (never `*`: the key hash stays in the database); a column added to it is added here. */
const COLUMNS = 'id, account_id, name, prefix, models, group_name, rps_limit, inflight_limit, status, created_at, revoked_at';

export class ApiKeyRepository {
  constructor(private readonly ds: DataSource) {}

  /** Creates a key; the secret is returned here only (it is stored hashed). Pass `secret` to import a known key. */
  async create(input: {
    accountId: string;
    name?: string;
    models?: string[] | null;
    groupName?: string | null;
    rpsLimit?: number | null;
    inflightLimit?: number | null;
    secret?: string;
  }): Promise<{ key: ApiKeyRecord; secret: string }> {
    const secret = input.secret ?? newApiKeySecret();
    const rows: Row[] = await this.ds.query(
      `INSERT INTO api_keys (account_id, name, key_hash, prefix, models, group_name, rps_limit, inflight_limit)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8) RETURNING ${COLUMNS}`,
      [
        input.accountId,
        input.name ?? '',
        hashApiKey(secret),
        keyPrefix(secret),
        input.models ?? null,
        input.groupName ?? null,
        input.rpsLimit ?? null,
        input.inflightLimit ?? null,
      ],
    );
    return { key: toKey(rows[0]), secret };
  }

  /** The principal of an active key by its secret, or null (unknown or revoked). */
  async authenticate(secret: string): Promise<AuthPrincipal | null> {
    const rows: Row[] = await this.ds.query(
      `SELECT k.id, k.account_id, k.models AS key_models, k.rps_limit AS key_rps, k.inflight_limit AS key_inflight,
              g.name AS group_name, g.models AS group_models, g.price_ratio, g.rps_limit AS group_rps,
              g.inflight_limit AS group_inflight
       FROM api_keys k JOIN accounts a ON a.id = k.account_id
       JOIN groups g ON g.name = COALESCE(k.group_name, a.group_name)
       WHERE k.key_hash = $1 AND k.status = 'active'`,
      [hashApiKey(secret)],
    );
    const r = rows[0];
    if (!r) return null;
    return {
      keyId: r.id as string,
      accountId: r.account_id as string,
      groupName: r.group_name as string,
      keyModels: (r.key_models as string[] | null) ?? null,
      groupModels: (r.group_models as string[] | null) ?? null,
      priceRatio: Number(r.price_ratio),
      rpsLimit: ((r.key_rps ?? r.group_rps) as number | null) ?? null,
      inflightLimit: ((r.key_inflight ?? r.group_inflight) as number | null) ?? null,
    };
  }

  async get(id: string): Promise<ApiKeyRecord | null> {
    const rows: Row[] = await this.ds.query(`SELECT ${COLUMNS} FROM api_keys WHERE id = $1`, [id]);
    return rows[0] ? toKey(rows[0]) : null;
  }

  async listForAccount(accountId: string): Promise<ApiKeyRecord[]> {
    const rows: Row[] = await this.ds.query(`SELECT ${COLUMNS} FROM api_keys WHERE account_id = $1 ORDER BY created_at`, [accountId]);
    return rows.map(toKey);
  }

  /** Revokes a key; true when it was active. */
  async revoke(id: string): Promise<boolean> {
    const list = rowsOf(
      await this.ds.query(`UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE id = $1 AND status = 'active' RETURNING id`, [id]),
    );
    return list.length > 0;
  }
}
