import { rowsOf, type Row } from './sql';
import type { DataSource } from 'typeorm';
import { hashApiKey, keyPrefix, newApiKeySecret } from '../ids';
import type { SpendWindow } from '../entities/api-key.entity';

/**
 * The period a cap counts in, from the database clock (one clock for every edge): `life`, the UTC day `YYYY-MM-DD`
 * or month `YYYY-MM`. `windowExpr`: a SQL expression of the key's spend_window.
 */
export const spendPeriodSql = (windowExpr: string): string =>
  `CASE ${windowExpr} WHEN 'day' THEN to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD') WHEN 'month' THEN to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM') ELSE 'life' END`;

/** A key's spending cap: `maxSpend` minor units over its life (`window` null) or per UTC day or month. */
export interface SpendCap {
  maxSpend: bigint;
  window: SpendWindow | null;
}

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
  /** The key's spending cap, enforced by the hold statement; null = none. */
  cap: SpendCap | null;
  /** After this the key answers 401 "expired"; null = never. */
  expiresAt: Date | null;
  /** Set when the secret used is the one a rotation replaced: it answers 401 "rotated" from then on. */
  rotatedSecretValidUntil: Date | null;
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
  cap: SpendCap | null;
  expiresAt: Date | null;
  /** When the secret was last replaced, and until when the one before it is still accepted. */
  rotatedAt: Date | null;
  previousValidUntil: Date | null;
  /** A capped key's spend in the current period (api_key_spend, as the hold statement counts it); null: no cap. */
  spent: bigint | null;
}

/** PATCH /api/keys/{id}: what may change (absent: unchanged; null: removed). */
export interface KeyCapsPatch {
  cap?: SpendCap | null;
  expiresAt?: Date | null;
}

const dateOf = (v: unknown): Date | null => (v ? new Date(v as string) : null);
const capOf = (maxSpend: unknown, window: unknown): SpendCap | null =>
  maxSpend === null || maxSpend === undefined ? null : { maxSpend: BigInt(maxSpend as string), window: (window as SpendWindow | null) ?? null };

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
  revokedAt: dateOf(r.revoked_at),
  cap: capOf(r.max_spend, r.spend_window),
  expiresAt: dateOf(r.expires_at),
  rotatedAt: dateOf(r.rotated_at),
  previousValidUntil: dateOf(r.previous_valid_until),
  spent: r.max_spend === null || r.max_spend === undefined ? null : BigInt((r.spent as string | null) ?? '0'),
});

/** The columns toApiKey reads (never `*`: the key hash stays in the database); a column added to it is added here. */
const COLUMNS = `id, account_id, name, prefix, models, group_name, rps_limit, inflight_limit, status, created_at, revoked_at,
  max_spend, spend_window, expires_at, rotated_at, previous_valid_until,
  (SELECT s.spent FROM api_key_spend s WHERE s.api_key_id = api_keys.id AND s.period = ${spendPeriodSql('api_keys.spend_window')}) AS spent`;

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
    cap?: SpendCap | null;
    expiresAt?: Date | null;
    secret?: string;
  }): Promise<{ key: ApiKeyRecord; secret: string }> {
    const secret = input.secret ?? newApiKeySecret();
    const rows: Row[] = await this.ds.query(
      `INSERT INTO api_keys (account_id, name, key_hash, prefix, models, group_name, rps_limit, inflight_limit, max_spend, spend_window, expires_at)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11) RETURNING ${COLUMNS}`,
      [
        input.accountId,
        input.name ?? '',
        hashApiKey(secret),
        keyPrefix(secret),
        input.models ?? null,
        input.groupName ?? null,
        input.rpsLimit ?? null,
        input.inflightLimit ?? null,
        input.cap ? input.cap.maxSpend.toString() : null,
        input.cap?.window ?? null,
        input.expiresAt ?? null,
      ],
    );
    return { key: toKey(rows[0]), secret };
  }

  /**
   * The principal of an active key by its secret — its current one, or the one its last rotation replaced (then
   * `rotatedSecretValidUntil` says until when it is accepted) — or null (unknown or revoked). An expired key is
   * found too, with its `expiresAt`: the caller answers it with its own message (key-authenticator.ts).
   */
  async authenticate(secret: string): Promise<AuthPrincipal | null> {
    const rows: Row[] = await this.ds.query(
      `SELECT k.id, k.account_id, k.models AS key_models, k.rps_limit AS key_rps, k.inflight_limit AS key_inflight,
              k.max_spend, k.spend_window, k.expires_at, CASE WHEN k.key_hash = $1 THEN NULL ELSE k.previous_valid_until END AS secret_until,
              g.name AS group_name, g.models AS group_models, g.price_ratio, g.rps_limit AS group_rps,
              g.inflight_limit AS group_inflight
       FROM api_keys k JOIN accounts a ON a.id = k.account_id
       JOIN groups g ON g.name = COALESCE(k.group_name, a.group_name)
       WHERE k.id = (SELECT id FROM api_keys WHERE key_hash = $1
                     UNION ALL SELECT id FROM api_keys WHERE previous_key_hash = $1 AND previous_key_hash IS NOT NULL LIMIT 1)
         AND k.status = 'active'`,
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
      cap: capOf(r.max_spend, r.spend_window),
      expiresAt: dateOf(r.expires_at),
      rotatedSecretValidUntil: dateOf(r.secret_until),
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

  /**
   * A new secret for an active key, under the same id (its history, limits and cap stay): the secret it replaces is
   * accepted for `overlapSeconds` more (a secret replaced before is dropped at once). Null when the key is not active.
   */
  async rotate(id: string, overlapSeconds: number): Promise<{ key: ApiKeyRecord; secret: string } | null> {
    const secret = newApiKeySecret();
    const rows = rowsOf(
      await this.ds.query(
        `UPDATE api_keys SET previous_key_hash = key_hash, previous_valid_until = now() + make_interval(secs => $3),
                key_hash = $2, prefix = $4, rotated_at = now()
         WHERE id = $1 AND status = 'active' RETURNING ${COLUMNS}`,
        [id, hashApiKey(secret), overlapSeconds, keyPrefix(secret)],
      ),
    );
    return rows[0] ? { key: toKey(rows[0]), secret } : null;
  }

  /**
   * Changes a key's cap and end date (absent fields stay). The next hold checks the new cap against the current
   * period's spend (a window change counts from that window's row: a new one starts at 0); holds already taken stay.
   * Null when the key does not exist.
   */
  async updateCaps(id: string, patch: KeyCapsPatch): Promise<ApiKeyRecord | null> {
    const sets: string[] = [];
    const params: unknown[] = [id];
    const set = (col: string, v: unknown) => {
      params.push(v);
      sets.push(`${col} = $${params.length}`);
    };
    if (patch.cap !== undefined) {
      set('max_spend', patch.cap ? patch.cap.maxSpend.toString() : null);
      set('spend_window', patch.cap?.window ?? null);
    }
    if (patch.expiresAt !== undefined) set('expires_at', patch.expiresAt);
    if (sets.length === 0) return this.get(id);
    const rows = rowsOf(await this.ds.query(`UPDATE api_keys SET ${sets.join(', ')} WHERE id = $1 RETURNING ${COLUMNS}`, params));
    return rows[0] ? toKey(rows[0]) : null;
  }

  /**
   * A chat call's reservation on its key's cap (docs/messages.md, "Keys with a spending cap"): `amount`, the most the
   * call can cost, is counted into the key's spend of the current period when it fits under the cap — in one
   * statement, with the same conditional upsert as the hold statement's, so concurrent calls and submits on every
   * edge together never pass the cap. Answers the period it was counted in (giveBackSpend takes it), or null when
   * the cap refuses it.
   */
  async reserveSpend(keyId: string, cap: SpendCap, amount: bigint): Promise<string | null> {
    const rows = rowsOf(
      await this.ds.query(
        `INSERT INTO api_key_spend AS s (api_key_id, period, spent, cap)
         SELECT $1::uuid, ${spendPeriodSql('$4::text')}, $2::bigint, $3::bigint WHERE $2::bigint <= $3::bigint
         ON CONFLICT (api_key_id, period) DO UPDATE SET spent = s.spent + EXCLUDED.spent, cap = EXCLUDED.cap
           WHERE s.spent + EXCLUDED.spent <= EXCLUDED.cap
         RETURNING period`,
        [keyId, amount.toString(), cap.maxSpend.toString(), cap.window],
      ),
    );
    return rows[0] ? String(rows[0].period) : null;
  }

  /** What a reservation did not use, given back to the period it was counted in (never below zero). */
  async giveBackSpend(keyId: string, period: string, amount: bigint): Promise<void> {
    if (amount <= 0n) return;
    await this.ds.query(`UPDATE api_key_spend SET spent = GREATEST(spent - $3::bigint, 0) WHERE api_key_id = $1 AND period = $2`, [
      keyId,
      period,
      amount.toString(),
    ]);
  }

  /** Revokes a key; true when it was active. */
  async revoke(id: string): Promise<boolean> {
    const list = rowsOf(
      await this.ds.query(`UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE id = $1 AND status = 'active' RETURNING id`, [id]),
    );
    return list.length > 0;
  }
}
