import type { DataSource } from 'typeorm';
import { randomBase62 } from '../ids';
import type { Row } from './sql';

/** `group_` + 24 base62 characters. */
export const newAssetGroupId = (): string => `group_${randomBase62(24)}`;

export interface AssetGroupRecord {
  id: string;
  accountId: string;
  name: string;
  description: string;
  /** Created because the submission named no group (spec 2.5). */
  autoCreated: boolean;
  /** Assets in the group, whatever their state. */
  assetCount: number;
  createdAt: Date;
}

export type NewAssetGroup = Pick<AssetGroupRecord, 'id' | 'accountId' | 'name' | 'description' | 'autoCreated'>;

const SELECT = `
  SELECT g.*, (SELECT count(*)::int FROM avatar_assets a WHERE a.group_id = g.id) AS asset_count
  FROM asset_groups g`;

function toGroup(r: Row): AssetGroupRecord {
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    name: r.name as string,
    description: r.description as string,
    autoCreated: Boolean(r.auto_created),
    assetCount: Number(r.asset_count ?? 0),
    createdAt: new Date(r.created_at as string),
  };
}

/** Avatar asset groups of an account; another account's group is never returned (it reads like a missing one). */
export class AssetGroupRepository {
  /** A DataSource, or an EntityManager to write inside the submit transaction. */
  constructor(private readonly ds: Pick<DataSource, 'query'>) {}

  async create(g: NewAssetGroup): Promise<void> {
    await this.ds.query(`INSERT INTO asset_groups (id, account_id, name, description, auto_created) VALUES ($1, $2, $3, $4, $5)`, [
      g.id,
      g.accountId,
      g.name,
      g.description,
      g.autoCreated,
    ]);
  }

  async get(accountId: string, id: string): Promise<AssetGroupRecord | null> {
    const rows: Row[] = await this.ds.query(`${SELECT} WHERE g.account_id = $1 AND g.id = $2`, [accountId, id]);
    return rows[0] ? toGroup(rows[0]) : null;
  }

  /** One page, newest first (keyset on created_at, id). */
  async list(accountId: string, q: { limit: number; after?: string }): Promise<{ items: AssetGroupRecord[]; hasMore: boolean }> {
    const rows: Row[] = await this.ds.query(
      `${SELECT} WHERE g.account_id = $1
         AND ($2::text IS NULL OR (g.created_at, g.id) < (SELECT created_at, id FROM asset_groups WHERE id = $2 AND account_id = $1))
       ORDER BY g.created_at DESC, g.id DESC LIMIT $3`,
      [accountId, q.after ?? null, q.limit + 1],
    );
    return { items: rows.slice(0, q.limit).map(toGroup), hasMore: rows.length > q.limit };
  }
}
