import type { DataSource } from 'typeorm';
import type { Row } from './sql';
import {
  ChannelKeyRepository,
  keysJson,
  keysOf,
  toHealth,
  type ChannelKeyRecord,
  type ChannelKeySecret,
  type HealthRecord,
  type KeyInput,
} from './channel-key.repository';

export interface ChannelRecord {
  id: string;
  name: string;
  protocol: string;
  baseUrl: string;
  models: string[] | null;
  groups: string[] | null;
  priority: number;
  weight: number;
  enabled: boolean;
  /** Messages-protocol channels: the header the upstream reads the protocol version from (always set when read). */
  versionHeader?: string;
  /** Public model id → the vendor's name for it (always set when read; `{}` maps nothing). */
  modelMap?: Record<string, string>;
  /** Protocol settings (always set when read; `{}` when none). Never secrets: keys live in `api_key`. */
  settings?: Record<string, unknown>;
  /** Its health (always set when read): `active`, `cooling` until a time, `disabled` with a reason. */
  health?: HealthRecord;
  /** Its keys (always set when read; `[]`: the channel's own `api_key` is its one key). Never the secrets here. */
  keys?: ChannelKeyRecord[];
}
/** A channel with its secrets, for the adapter call only: never log it, never put it in job data. */
export interface ChannelWithSecret extends ChannelRecord {
  /** The one-key form (channels.api_key): used when `keys` is empty. */
  apiKey: string;
  keys: ChannelKeySecret[];
}
export interface ChannelInput {
  name: string;
  protocol?: string;
  baseUrl: string;
  apiKey?: string;
  /** Several keys (channel_keys); given, they replace the channel's key set (and its one-key `apiKey`). */
  apiKeys?: KeyInput[];
  models?: string[] | null;
  groups?: string[] | null;
  priority?: number;
  weight?: number;
  enabled?: boolean;
  versionHeader?: string;
  modelMap?: Record<string, string>;
  settings?: Record<string, unknown>;
}

const toChannel = (r: Row): ChannelRecord => ({
  id: r.id as string,
  name: r.name as string,
  protocol: r.protocol as string,
  baseUrl: r.base_url as string,
  models: (r.models as string[] | null) ?? null,
  groups: (r.groups as string[] | null) ?? null,
  priority: Number(r.priority),
  weight: Number(r.weight),
  enabled: Boolean(r.enabled),
  versionHeader: r.version_header as string,
  modelMap: (r.model_map as Record<string, string> | null) ?? {},
  settings: (r.settings as Record<string, unknown> | null) ?? {},
  health: toHealth(r),
  keys: keysOf(r).map(({ secret: _secret, ...k }) => k),
});
const withSecret = (r: Row): ChannelWithSecret => ({ ...toChannel(r), apiKey: r.api_key as string, keys: keysOf(r) });
const BASE_COLS = `id, name, protocol, base_url, models, groups, priority, weight, enabled, version_header, model_map, settings,
  status, cooling_until, disabled_reason, last_error, last_error_at`;
const COLS = `${BASE_COLS}, ${keysJson(false)}`;
const SECRET_COLS = `${BASE_COLS}, api_key, ${keysJson(true)}`;

export class ChannelRepository {
  constructor(private readonly ds: DataSource) {}

  /** Enabled channels that serve this model for this group (null lists mean "all"), with secrets. */
  async candidates(model: string, group: string): Promise<ChannelWithSecret[]> {
    const rows: Row[] = await this.ds.query(
      `SELECT ${SECRET_COLS} FROM channels c
       WHERE enabled AND (models IS NULL OR $1 = ANY(models)) AND (groups IS NULL OR $2 = ANY(groups))
       ORDER BY priority DESC, id`,
      [model, group],
    );
    return rows.map(withSecret);
  }

  /** Enabled channels that serve this model for this group, without secrets (the edge's submit-time check). */
  async serving(model: string, group: string): Promise<ChannelRecord[]> {
    const rows: Row[] = await this.ds.query(
      `SELECT ${COLS} FROM channels c
       WHERE enabled AND (models IS NULL OR $1 = ANY(models)) AND (groups IS NULL OR $2 = ANY(groups))`,
      [model, group],
    );
    return rows.map(toChannel);
  }

  async getWithSecret(id: string): Promise<ChannelWithSecret | null> {
    const rows: Row[] = await this.ds.query(`SELECT ${SECRET_COLS} FROM channels c WHERE id = $1`, [id]);
    return rows[0] ? withSecret(rows[0]) : null;
  }

  async list(): Promise<ChannelRecord[]> {
    const rows: Row[] = await this.ds.query(`SELECT ${COLS} FROM channels c ORDER BY priority DESC, name`);
    return rows.map(toChannel);
  }

  async get(id: string): Promise<ChannelRecord | null> {
    const rows: Row[] = await this.ds.query(`SELECT ${COLS} FROM channels c WHERE id = $1`, [id]);
    return rows[0] ? toChannel(rows[0]) : null;
  }

  /** A new channel and its keys (`apiKeys`), in one statement. */
  async create(c: ChannelInput): Promise<ChannelRecord> {
    const keys = c.apiKeys ?? [];
    const rows: Row[] = await this.ds.query(
      `WITH c AS (
         INSERT INTO channels (name, protocol, base_url, api_key, models, groups, priority, weight, enabled, version_header, model_map, settings)
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12) RETURNING *
       ), k AS (
         INSERT INTO channel_keys (channel_id, secret, weight, created_at)
         SELECT c.id, s, w, now() + n * interval '1 microsecond' FROM c, unnest($13::text[], $14::int[]) WITH ORDINALITY AS x(s, w, n)
       )
       SELECT c.id FROM c`,
      [
        c.name,
        c.protocol ?? 'gateway',
        c.baseUrl,
        c.apiKey ?? '',
        c.models ?? null,
        c.groups ?? null,
        c.priority ?? 0,
        c.weight ?? 1,
        c.enabled ?? true,
        c.versionHeader ?? 'anthropic-version',
        JSON.stringify(c.modelMap ?? {}),
        JSON.stringify(c.settings ?? {}),
        keys.map((k) => k.secret),
        keys.map((k) => k.weight ?? 1),
      ],
    );
    // the keys written by the same statement are not visible to its own reads: read the channel back
    return (await this.get(rows[0].id as string))!;
  }

  /** Partial update; only the given fields change. */
  async update(id: string, patch: Partial<ChannelInput>): Promise<ChannelRecord | null> {
    const map: Record<string, string> = {
      name: 'name',
      protocol: 'protocol',
      baseUrl: 'base_url',
      apiKey: 'api_key',
      models: 'models',
      groups: 'groups',
      priority: 'priority',
      weight: 'weight',
      enabled: 'enabled',
      versionHeader: 'version_header',
      modelMap: 'model_map',
      settings: 'settings',
    };
    const json = new Set(['modelMap', 'settings']);
    const sets: string[] = [];
    const params: unknown[] = [id];
    if (patch.apiKeys !== undefined || patch.apiKey !== undefined) {
      if (!(await this.get(id))) return null;
      // a key set replaces the whole set; the one-key form replaces it with that one key
      await new ChannelKeyRepository(this.ds).replace(id, patch.apiKeys ?? []);
      if (patch.apiKeys !== undefined) patch = { ...patch, apiKey: '' };
    }
    for (const [k, col] of Object.entries(map)) {
      if (k in patch) {
        const v = (patch as Record<string, unknown>)[k];
        params.push(json.has(k) ? JSON.stringify(v ?? {}) : (v ?? null));
        sets.push(`${col} = $${params.length}`);
      }
    }
    if (sets.length > 0) await this.ds.query(`UPDATE channels SET ${sets.join(', ')}, updated_at = now() WHERE id = $1`, params);
    return this.get(id);
  }
}
