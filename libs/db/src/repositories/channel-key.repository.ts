import type { DataSource } from 'typeorm';
import { rowsOf, type Row } from './sql';

/** A channel's or a key's health (issue 37): `active`, `cooling` until a time, or `disabled` with a reason. */
export type HealthStatus = 'active' | 'cooling' | 'disabled';

export interface HealthRecord {
  status: HealthStatus;
  coolingUntil: Date | null;
  disabledReason: string | null;
  lastError: string | null;
  lastErrorAt: Date | null;
}

/** One vendor key of a channel as answers show it: never the secret, only its last characters (`hint`). */
export interface ChannelKeyRecord extends HealthRecord {
  id: string;
  channelId: string;
  weight: number;
  /** `…` and the secret's last 4 characters (`****` for a secret shorter than 12: its end would say too much). */
  hint: string;
}
/** A key with its secret, for the adapter call only: never log it, never put it in job data. */
export interface ChannelKeySecret extends ChannelKeyRecord {
  secret: string;
}

const date = (v: unknown): Date | null => (v === null || v === undefined ? null : new Date(v as string));

export const toHealth = (r: Row): HealthRecord => ({
  status: (r.status as HealthStatus | undefined) ?? 'active',
  coolingUntil: date(r.cooling_until),
  disabledReason: (r.disabled_reason as string | null | undefined) ?? null,
  lastError: (r.last_error as string | null | undefined) ?? null,
  lastErrorAt: date(r.last_error_at),
});

export const toChannelKey = (r: Row): ChannelKeyRecord => ({
  id: r.id as string,
  channelId: r.channel_id as string,
  weight: Number(r.weight),
  hint: r.hint as string,
  ...toHealth(r),
});

/** The key columns every read names (the secret only where a call needs it). */
export const KEY_COLS = `id, channel_id, weight, status, cooling_until, disabled_reason, last_error, last_error_at,
  CASE WHEN length(secret) >= 12 THEN '…' || right(secret, 4) ELSE '****' END AS hint`;

/** A channel's keys as one json array column of a channel read (`c`: the channel's alias), in the order they were added. */
export const keysJson = (withSecret: boolean): string =>
  `(SELECT COALESCE(json_agg(json_build_object('id', k.id, 'channel_id', k.channel_id, 'weight', k.weight, 'status', k.status,
      'cooling_until', k.cooling_until, 'disabled_reason', k.disabled_reason, 'last_error', k.last_error, 'last_error_at', k.last_error_at,
      'hint', CASE WHEN length(k.secret) >= 12 THEN '…' || right(k.secret, 4) ELSE '****' END${withSecret ? `, 'secret', k.secret` : ''})
      ORDER BY k.created_at, k.id), '[]'::json) FROM channel_keys k WHERE k.channel_id = c.id) AS keys`;

export const keysOf = (r: Row): ChannelKeySecret[] =>
  ((r.keys as Row[] | null) ?? []).map((k) => ({ ...toChannelKey(k), ...(typeof k.secret === 'string' ? { secret: k.secret } : { secret: '' }) }));

export interface KeyInput {
  secret: string;
  weight?: number;
}

/** The keys of channels (issue 37 item 1): added, disabled, re-enabled and removed one at a time. */
export class ChannelKeyRepository {
  constructor(private readonly ds: DataSource) {}

  async add(channelId: string, keys: readonly KeyInput[]): Promise<ChannelKeyRecord[]> {
    if (keys.length === 0) return [];
    const rows: Row[] = await this.ds.query(
      `INSERT INTO channel_keys (channel_id, secret, weight, created_at)
       SELECT $1, s, w, now() + n * interval '1 microsecond' FROM unnest($2::text[], $3::int[]) WITH ORDINALITY AS x(s, w, n) RETURNING ${KEY_COLS}`,
      [channelId, keys.map((k) => k.secret), keys.map((k) => k.weight ?? 1)],
    );
    return rows.map(toChannelKey);
  }

  /** The channel's whole key set becomes `keys` (the `api_keys`/`api_key` fields of a PATCH), in one transaction. */
  async replace(channelId: string, keys: readonly KeyInput[]): Promise<void> {
    await this.ds.transaction(async (m) => {
      await m.query(`DELETE FROM channel_keys WHERE channel_id = $1`, [channelId]);
      // the channel's own api_key is the one-key form of the old rows: a key set replaces it
      await m.query(`UPDATE channels SET api_key = '', updated_at = now() WHERE id = $1`, [channelId]);
      if (keys.length)
        await m.query(
          `INSERT INTO channel_keys (channel_id, secret, weight, created_at)
           SELECT $1, s, w, now() + n * interval '1 microsecond' FROM unnest($2::text[], $3::int[]) WITH ORDINALITY AS x(s, w, n)`,
          [channelId, keys.map((k) => k.secret), keys.map((k) => k.weight ?? 1)],
        );
    });
  }

  async list(channelId: string): Promise<ChannelKeyRecord[]> {
    const rows: Row[] = await this.ds.query(`SELECT ${KEY_COLS} FROM channel_keys WHERE channel_id = $1 ORDER BY created_at, id`, [channelId]);
    return rows.map(toChannelKey);
  }

  /**
   * The operator's switch: `disabled` (with a reason) takes the key out of traffic and out of the probe's reach;
   * `active` brings it back at once (its last error stays for the record). Null: no such key on this channel.
   */
  async update(
    channelId: string,
    keyId: string,
    patch: { status?: 'active' | 'disabled'; reason?: string; weight?: number },
  ): Promise<ChannelKeyRecord | null> {
    const rows = rowsOf(
      await this.ds.query(
        `UPDATE channel_keys SET
           weight = COALESCE($3, weight),
           status = COALESCE($4, status),
           disabled_reason = CASE WHEN $4 = 'disabled' THEN $5 WHEN $4 = 'active' THEN NULL ELSE disabled_reason END,
           cooling_until = CASE WHEN $4 IS NULL THEN cooling_until ELSE NULL END,
           cool_level = CASE WHEN $4 IS NULL THEN cool_level ELSE 0 END,
           -- an operator's disable is not probed back; an automatic one is (next_probe_at set by the health store)
           next_probe_at = CASE WHEN $4 IS NULL THEN next_probe_at ELSE NULL END,
           updated_at = now()
         WHERE channel_id = $1 AND id = $2 RETURNING ${KEY_COLS}`,
        [channelId, keyId, patch.weight ?? null, patch.status ?? null, patch.status === 'disabled' ? (patch.reason ?? 'disabled by an operator') : null],
      ),
    );
    return rows[0] ? toChannelKey(rows[0]) : null;
  }

  /** True when the key was there. Tasks it submitted fall back to another key of the channel for their polls. */
  async remove(channelId: string, keyId: string): Promise<boolean> {
    const rows = rowsOf(await this.ds.query(`DELETE FROM channel_keys WHERE channel_id = $1 AND id = $2 RETURNING id`, [channelId, keyId]));
    return rows.length > 0;
  }
}
