import { resolveModel, type AssetResult, type TaskResult } from '@gmg/contracts';
import type { AssetRecord, AssetRepository, AssetReview, TaskRecord } from '@gmg/db';
import type { CompletionHandler } from '@gmg/tasks';

/**
 * The pattern motion-2.0's contract gives its `asset_urls` items (read from the registry, the one definition): an
 * upstream id outside it could never be rendered, so such an approval is useless.
 */
export function motionAssetUrlPattern(): RegExp {
  const schema = resolveModel('motion-2.0')?.contract?.inputSchema as { properties?: { asset_urls?: { items?: { pattern?: unknown } } } } | undefined;
  const pattern = schema?.properties?.asset_urls?.items?.pattern;
  if (typeof pattern !== 'string') throw new Error('motion-2.0 contract has no asset_urls item pattern');
  return new RegExp(pattern);
}
const ASSET_URL = motionAssetUrlPattern();
export const NO_REVIEW_REASON = 'The upstream returned no review for this asset';
export const BAD_REFERENCE_REASON = 'The upstream approved the asset under an unusable reference';

/** One asset's decision from the upstream's entry at the same position of the batch (spec 2.2 lists them in order). */
export function reviewOf(position: number, upstream: AssetResult | undefined): AssetReview {
  if (!upstream) return { position, status: 'Rejected', reason: NO_REVIEW_REASON };
  if (upstream.status !== 'Active') {
    return { position, status: 'Rejected', reason: upstream.reason?.trim() || `The upstream did not approve the asset (status ${upstream.status})` };
  }
  const ref = `asset://${upstream.asset_id}`;
  if (!ASSET_URL.test(ref)) return { position, status: 'Rejected', reason: BAD_REFERENCE_REASON };
  return { position, status: 'Active', upstreamAssetId: upstream.asset_id, upstreamAssetUrl: ref };
}

/** Per-asset billing: the approved share of the hold, rounded down (all approved → exactly the hold). */
export function captureFor(price: bigint, approved: number, total: number): bigint {
  if (total <= 0) return 0n;
  return (price * BigInt(approved)) / BigInt(total);
}

const listed = (a: AssetRecord, r: AssetReview): AssetResult => ({
  asset_id: a.id,
  asset_url: `asset://${a.id}`,
  status: r.status,
  ...(r.reason ? { reason: r.reason } : {}),
});

/**
 * The avatar pool's completion step: record each asset's review (and the channel that made it) on our asset rows,
 * answer with our own asset ids (`result.assets` all, `result.usable_assets` only `Active`), and capture only the
 * approved assets' share of the hold. Idempotent: a resumed job records the same reviews again.
 */
export class AvatarReviewHandler implements CompletionHandler {
  constructor(private readonly assets: Pick<AssetRepository, 'forTask' | 'recordReviews'>) {}

  async onComplete(task: TaskRecord, upstream: TaskResult): Promise<{ result: TaskResult; captureAmount: bigint }> {
    const ours = await this.assets.forTask(task.id);
    const theirs = upstream.assets ?? [];
    const reviews = ours.map((a, i) => reviewOf(a.position, theirs[i]));
    await this.assets.recordReviews(task.id, task.channelId, reviews);
    const all = ours.map((a, i) => listed(a, reviews[i]!));
    const approved = reviews.filter((r) => r.status === 'Active').length;
    return {
      result: { assets: all, usable_assets: all.filter((a) => a.status === 'Active') },
      captureAmount: captureFor(task.price, approved, ours.length),
    };
  }
}
