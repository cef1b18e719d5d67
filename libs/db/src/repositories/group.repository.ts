import type { DataSource } from 'typeorm';
import type { Row } from './sql';

export interface GroupRecord {
  name: string;
  priceRatio: number;
  models: string[] | null;
  rpsLimit: number | null;
  inflightLimit: number | null;
}

const toGroup = (r: Row): GroupRecord => ({
  name: r.name as string,
  priceRatio: Number(r.price_ratio),
  models: (r.models as string[] | null) ?? null,
  rpsLimit: (r.rps_limit as number | null) ?? null,
  inflightLimit: (r.inflight_limit as number | null) ?? null,
});

/** The columns toGroup reads (never `*`); a column added to it is added here. */
const COLUMNS = 'name, price_ratio, models, rps_limit, inflight_limit';

export class GroupRepository {
  constructor(private readonly ds: DataSource) {}

  async list(): Promise<GroupRecord[]> {
    return ((await this.ds.query(`SELECT ${COLUMNS} FROM groups ORDER BY name`)) as Row[]).map(toGroup);
  }

  async get(name: string): Promise<GroupRecord | null> {
    const rows: Row[] = await this.ds.query(`SELECT ${COLUMNS} FROM groups WHERE name = $1`, [name]);
    return rows[0] ? toGroup(rows[0]) : null;
  }

  async upsert(g: GroupRecord): Promise<GroupRecord> {
    const rows: Row[] = await this.ds.query(
      `INSERT INTO groups (name, price_ratio, models, rps_limit, inflight_limit) VALUES ($1,$2,$3,$4,$5)
       ON CONFLICT (name) DO UPDATE SET price_ratio = EXCLUDED.price_ratio, models = EXCLUDED.models,
         rps_limit = EXCLUDED.rps_limit, inflight_limit = EXCLUDED.inflight_limit
       RETURNING ${COLUMNS}`,
      [g.name, g.priceRatio, g.models, g.rpsLimit, g.inflightLimit],
    );
    return toGroup(rows[0]);
  }
}
