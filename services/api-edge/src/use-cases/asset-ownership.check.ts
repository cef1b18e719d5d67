import type { NormalizedRequest } from '@gmg/contracts';
import type { UsableAsset } from '@gmg/db';
import { DomainError } from '@gmg/errors';

const FIELD = 'asset_urls';
const ASSET_PREFIX = 'asset://';

export interface AssetOwnershipDeps {
  assets: { usable(accountId: string, assetIds: readonly string[]): Promise<Map<string, UsableAsset>> };
}

/** The field the client sent its assets in (motion-2.0 takes `image_urls` / `first_frame_image` as `asset_urls`). */
const clientField = (request: NormalizedRequest, index: number): string => {
  const field = typeof request.derived.assetField === 'string' ? request.derived.assetField : FIELD;
  return field === 'first_frame_image' ? field : `${field}.${index}`;
};

/** The asset ids a request uses (`asset://<id>` items of `asset_urls`, motion-2.0, whichever field they came in). */
export function assetIdsOf(request: NormalizedRequest): string[] {
  const urls = request.upstreamBody[FIELD];
  if (!Array.isArray(urls)) return [];
  return urls.filter((u): u is string => typeof u === 'string' && u.startsWith(ASSET_PREFIX)).map((u) => u.slice(ASSET_PREFIX.length));
}

/**
 * Spec 1.5 / 4.8: only approved avatar assets of the caller's own account may be used. Checked before the price
 * hold, so a refusal costs nothing; an asset of another account (or rejected, pending, unknown) is answered exactly
 * like a missing one. Returns the request as the upstream must see it: every `asset://<our id>` rewritten to the
 * reviewing upstream's own reference, and the channel that reviewed them pinned (its ids mean nothing elsewhere).
 * Assets reviewed by two different channels cannot be rendered together: 400.
 */
export async function resolveAssetReferences(deps: AssetOwnershipDeps, accountId: string, request: NormalizedRequest): Promise<NormalizedRequest> {
  const ids = assetIdsOf(request);
  if (ids.length === 0) return request;
  const usable = await deps.assets.usable(accountId, ids);
  const index = ids.findIndex((id) => !usable.has(id));
  if (index >= 0) {
    throw new DomainError(
      'invalid_request',
      `\`${clientField(request, index)}\`: asset '${ids[index]}' is not an approved avatar asset of this account (submit it with POST /v1/motion2/private-avatar first)`,
      { field: clientField(request, index), rule: 'server:asset-ownership' },
    );
  }
  const assets = ids.map((id) => usable.get(id)!);
  const channel = assets[0]!.channelId;
  const other = assets.findIndex((a) => a.channelId !== channel);
  if (other >= 0) {
    throw new DomainError(
      'invalid_request',
      `\`${clientField(request, other)}\`: asset '${ids[other]}' was approved by another upstream than '${ids[0]}'; one request can only use assets approved together by the same upstream (submit them in one batch or group)`,
      { field: clientField(request, other), rule: 'server:asset-channel' },
    );
  }
  return {
    ...request,
    upstreamBody: { ...request.upstreamBody, [FIELD]: assets.map((a) => a.upstreamAssetUrl) },
    pinnedChannelId: channel,
  };
}
