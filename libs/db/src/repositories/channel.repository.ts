import type { DataSource } from 'typeorm';
import { rowsOf, type Row } from './sql';

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
}
/** A channel with its secret, for the adapter call only: never log it, never put it in job data. */
export interface ChannelWithSecret extends ChannelRecord {
  apiKey: string;
}
export interface ChannelInput {
  name: string;
  protocol?: string;
  baseUrl: string;
  apiKey?: string;
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
});
const COLS = `id, name, protocol, base_url, models, groups, priority, weight, enabled, version_header, model_map, settings`;

export class ChannelRepository {
  constructor(private readonly ds: DataSource) {}

  /** Enabled channels that serve this model for this group (null lists mean "all"), with secrets. */
  async candidates(model: string, group: string): Promise<ChannelWithSecret[]> {
    const rows: Row[] = await this.ds.query(
      `SELECT ${COLS}, api_key FROM channels
       WHERE enabled AND (models IS NULL OR $1 = ANY(models)) AND (groups IS NULL OR $2 = ANY(groups))
       ORDER BY priority DESC, id`,
      [model, group],
    );
    return rows.map((r) => ({ ...toChannel(r), apiKey: r.api_key as string }));
  }

  /** Enabled channels that serve this model for this group, without secrets (the edge's submit-time check). */
  async serving(model: string, group: string): Promise<ChannelRecord[]> {
    const rows: Row[] = await this.ds.query(
      `SELECT ${COLS} FROM channels
       WHERE enabled AND (models IS NULL OR $1 = ANY(models)) AND (groups IS NULL OR $2 = ANY(groups))`,
      [model, group],
    );
    return rows.map(toChannel);
  }

  async getWithSecret(id: string): Promise<ChannelWithSecret | null> {
    const rows: Row[] = await this.ds.query(`SELECT ${COLS}, api_key FROM channels WHERE id = $1`, [id]);
    return rows[0] ? { ...toChannel(rows[0]), apiKey: rows[0].api_key as string } : null;
  }

  async list(): Promise<ChannelRecord[]> {
    const rows: Row[] = await this.ds.query(`SELECT ${COLS} FROM channels ORDER BY priority DESC, name`);
    return rows.map(toChannel);
  }

  async create(c: ChannelInput): Promise<ChannelRecord> {
    const rows: Row[] = await this.ds.query(
      `INSERT INTO channels (name, protocol, base_url, api_key, models, groups, priority, weight, enabled, version_header, model_map, settings)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12) RETURNING ${COLS}`,
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
      ],
    );
    return toChannel(rows[0]);
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
    for (const [k, col] of Object.entries(map)) {
      if (k in patch) {
        const v = (patch as Record<string, unknown>)[k];
        params.push(json.has(k) ? JSON.stringify(v ?? {}) : (v ?? null));
        sets.push(`${col} = $${params.length}`);
      }
    }
    if (sets.length === 0) {
      const rows: Row[] = await this.ds.query(`SELECT ${COLS} FROM channels WHERE id = $1`, [id]);
      return rows[0] ? toChannel(rows[0]) : null;
    }
    const rows = rowsOf(await this.ds.query(`UPDATE channels SET ${sets.join(', ')}, updated_at = now() WHERE id = $1 RETURNING ${COLS}`, params));
    return rows[0] ? toChannel(rows[0]) : null;
  }
}
