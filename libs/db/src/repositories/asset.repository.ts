import type { DataSource } from 'typeorm';
import { randomBase62 } from '../ids';
import { rowsOf, type Row } from './sql';

export type AssetType = 'Image' | 'Video' | 'Audio';
/** Review states stored on an asset row: `Pending` until the avatar worker decides it. */
export type AssetReviewStatus = 'Pending' | 'Active' | 'Rejected';
/** What a client sees: the review state, with the batch task's own fate folded in (`Failed`: never reviewed). */
export type AssetStatus = AssetReviewStatus | 'Failed';

/** `asset_` + 24 base62 characters: unguessable, and valid in motion-2.0's `asset://<id>` pattern. */
export const newAssetId = (): string => `asset_${randomBase62(24)}`;

export interface AssetRecord {
  id: string;
  accountId: string;
  groupId: string;
  taskId: string;
  position: number;
  assetType: AssetType;
  name: string;
  url: string;
  projectName: string;
  status: AssetStatus;
  /** Why it was rejected (or why its batch failed). */
  reason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export type NewAsset = Pick<AssetRecord, 'id' | 'position' | 'assetType' | 'name' | 'url' | 'projectName'>;

/** A new asset as one element of a JSON array read by `jsonb_to_recordset` (here and in the avatar hold statement). */
export const toAssetRow = (a: NewAsset): Record<string, unknown> => ({
  id: a.id,
  position: a.position,
  asset_type: a.assetType,
  name: a.name,
  url: a.url,
  project_name: a.projectName,
});

/** One asset's review as the avatar worker records it (by its position in the batch). */
export interface AssetReview {
  position: number;
  status: 'Active' | 'Rejected';
  reason?: string;
  upstreamAssetId?: string;
  upstreamAssetUrl?: string;
}

/** An approved asset as motion-2.0 needs it: what the reviewing channel calls it, and that channel. */
export interface UsableAsset {
  id: string;
  channelId: string;
  upstreamAssetUrl: string;
}

export interface AssetListQuery {
  groupId?: string;
  status?: AssetStatus;
  limit: number;
  /** Keyset cursor: the id of the last asset of the previous page. */
  after?: string;
}

// The task's state decides what the client sees: only a completed batch's decisions are final.
const VISIBLE = `
  SELECT a.*,
         CASE WHEN t.status = 'failed' THEN 'Failed' WHEN t.status = 'completed' THEN a.status ELSE 'Pending' END AS visible_status,
         CASE WHEN t.status = 'failed' THEN t.error->>'message' WHEN t.status = 'completed' THEN a.reason END AS visible_reason
  FROM avatar_assets a JOIN tasks t ON t.id = a.task_id`;

function toAsset(r: Row): AssetRecord {
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    groupId: r.group_id as string,
    taskId: r.task_id as string,
    position: Number(r.position),
    assetType: r.asset_type as AssetType,
    name: r.name as string,
    url: r.url as string,
    projectName: r.project_name as string,
    status: r.visible_status as AssetStatus,
    reason: (r.visible_reason as string | null) ?? null,
    createdAt: new Date(r.created_at as string),
    updatedAt: new Date(r.updated_at as string),
  };
}

/** Avatar assets (spec 2.5, 4.8), owned by an account; a foreign asset is never returned. */
export class AssetRepository {
  /** A DataSource, or an EntityManager to write inside the submit transaction. */
  constructor(private readonly ds: Pick<DataSource, 'query'>) {}

  /** The assets of one submission, `Pending`, in the order they were sent. */
  async insertBatch(accountId: string, groupId: string, taskId: string, assets: readonly NewAsset[]): Promise<void> {
    if (assets.length === 0) return;
    await this.ds.query(
      `INSERT INTO avatar_assets (id, account_id, group_id, task_id, position, asset_type, name, url, project_name)
       SELECT r.id, $1, $2, $3, r.position, r.asset_type, r.name, r.url, r.project_name
       FROM jsonb_to_recordset($4::jsonb) AS r(id text, position int, asset_type text, name text, url text, project_name text)`,
      [accountId, groupId, taskId, JSON.stringify(assets.map(toAssetRow))],
    );
  }

  /** The assets of one batch task, in submission order (the avatar worker matches reviews to them by position). */
  async forTask(taskId: string): Promise<AssetRecord[]> {
    const rows: Row[] = await this.ds.query(`${VISIBLE} WHERE a.task_id = $1 ORDER BY a.position`, [taskId]);
    return rows.map(toAsset);
  }

  /** Stores each asset's decision and the channel that made it. Idempotent: a resumed job writes the same values. */
  async recordReviews(taskId: string, channelId: string | null, reviews: readonly AssetReview[]): Promise<void> {
    if (reviews.length === 0) return;
    await this.ds.query(
      `UPDATE avatar_assets a SET status = r.status, reason = r.reason, upstream_asset_id = r.upstream_asset_id,
              upstream_asset_url = r.upstream_asset_url, channel_id = $2::uuid, updated_at = now()
       FROM jsonb_to_recordset($3::jsonb) AS r(position int, status text, reason text, upstream_asset_id text, upstream_asset_url text)
       WHERE a.task_id = $1 AND a.position = r.position`,
      [
        taskId,
        channelId,
        JSON.stringify(
          reviews.map((x) => ({
            position: x.position,
            status: x.status,
            reason: x.reason ?? null,
            upstream_asset_id: x.upstreamAssetId ?? null,
            upstream_asset_url: x.upstreamAssetUrl ?? null,
          })),
        ),
      ],
    );
  }

  /**
   * Which of `assetIds` this account may use: approved (`Active`) in a batch that completed. A foreign, rejected,
   * pending or unknown id is simply absent.
   */
  async usable(accountId: string, assetIds: readonly string[]): Promise<Map<string, UsableAsset>> {
    if (assetIds.length === 0) return new Map();
    const rows: Row[] = await this.ds.query(
      `SELECT a.id, a.channel_id, a.upstream_asset_id, a.upstream_asset_url
       FROM avatar_assets a JOIN tasks t ON t.id = a.task_id
       WHERE a.account_id = $1 AND a.id = ANY($2::text[]) AND a.status = 'Active' AND t.status = 'completed'
         AND a.channel_id IS NOT NULL AND a.upstream_asset_id IS NOT NULL`,
      [accountId, assetIds],
    );
    return new Map(
      rows.map((r) => [
        r.id as string,
        {
          id: r.id as string,
          channelId: r.channel_id as string,
          upstreamAssetUrl: (r.upstream_asset_url as string | null) ?? `asset://${r.upstream_asset_id as string}`,
        },
      ]),
    );
  }

  async get(accountId: string, id: string): Promise<AssetRecord | null> {
    const rows: Row[] = await this.ds.query(`${VISIBLE} WHERE a.account_id = $1 AND a.id = $2`, [accountId, id]);
    return rows[0] ? toAsset(rows[0]) : null;
  }

  /** One page, newest first (keyset on created_at, id); `hasMore` says whether another page follows. */
  async list(accountId: string, q: AssetListQuery): Promise<{ items: AssetRecord[]; hasMore: boolean }> {
    const rows = rowsOf(
      await this.ds.query(
        `SELECT * FROM (${VISIBLE} WHERE a.account_id = $1) v
       WHERE ($2::text IS NULL OR v.group_id = $2) AND ($3::text IS NULL OR v.visible_status = $3)
         AND ($4::text IS NULL OR (v.created_at, v.id) < (SELECT created_at, id FROM avatar_assets WHERE id = $4 AND account_id = $1))
       ORDER BY v.created_at DESC, v.id DESC LIMIT $5`,
        [accountId, q.groupId ?? null, q.status ?? null, q.after ?? null, q.limit + 1],
      ),
    );
    return { items: rows.slice(0, q.limit).map(toAsset), hasMore: rows.length > q.limit };
  }
}
