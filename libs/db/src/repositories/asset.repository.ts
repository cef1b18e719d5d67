import type { DataSource } from 'typeorm';
import type { Row } from './sql';

/**
 * Avatar assets as the task store knows them: an asset belongs to the account whose completed avatar task lists it
 * in `result.usable_assets` (spec 2.2: approved assets, status `Active`).
 */
export class AssetRepository {
  constructor(private readonly ds: DataSource) {}

  /** Which of `assetIds` are approved assets of this account. */
  async ownedUsable(accountId: string, assetIds: readonly string[]): Promise<Set<string>> {
    if (assetIds.length === 0) return new Set();
    const rows: Row[] = await this.ds.query(
      `SELECT DISTINCT a->>'asset_id' AS asset_id
       FROM tasks t, jsonb_array_elements(COALESCE(t.result->'usable_assets', '[]'::jsonb)) a
       WHERE t.account_id = $1 AND t.status = 'completed' AND t.pool = 'avatar'
         AND a->>'asset_id' = ANY($2::text[]) AND COALESCE(a->>'status', 'Active') = 'Active'`,
      [accountId, assetIds],
    );
    return new Set(rows.map((r) => r.asset_id as string));
  }
}
