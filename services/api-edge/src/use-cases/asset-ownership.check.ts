import type { NormalizedRequest } from '@gmg/contracts';
import { DomainError } from '@gmg/errors';

const FIELD = 'asset_urls';
const ASSET_PREFIX = 'asset://';

export interface AssetOwnershipDeps {
  assets: { ownedUsable(accountId: string, assetIds: readonly string[]): Promise<Set<string>> };
}

/** The asset ids a request uses (`asset://<id>` items of `asset_urls`, motion-2.0). */
export function assetIdsOf(request: NormalizedRequest): string[] {
  const urls = request.upstreamBody[FIELD];
  if (!Array.isArray(urls)) return [];
  return urls.filter((u): u is string => typeof u === 'string' && u.startsWith(ASSET_PREFIX)).map((u) => u.slice(ASSET_PREFIX.length));
}

/**
 * Spec 1.5 / 4.8: only approved avatar assets of the caller's own account may be used. Checked before the price
 * hold, so a refusal costs nothing; an asset of another account is answered exactly like a missing one.
 */
export async function checkAssetOwnership(deps: AssetOwnershipDeps, accountId: string, request: NormalizedRequest): Promise<void> {
  const ids = assetIdsOf(request);
  if (ids.length === 0) return;
  const owned = await deps.assets.ownedUsable(accountId, ids);
  const index = ids.findIndex((id) => !owned.has(id));
  if (index >= 0) {
    throw new DomainError(
      'invalid_request',
      `\`${FIELD}.${index}\`: asset '${ids[index]}' is not an approved avatar asset of this account (submit it with POST /v1/motion2/private-avatar first)`,
      { field: `${FIELD}.${index}`, rule: 'server:asset-ownership' },
    );
  }
}
