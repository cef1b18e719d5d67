import type { AssetRecord, AssetReview, TaskRecord } from '@gmg/db';
import { AvatarReviewHandler, BAD_REFERENCE_REASON, NO_REVIEW_REASON, captureFor, motionAssetUrlPattern, reviewOf } from './avatar-review.handler';

const asset = (i: number): AssetRecord => ({
  id: `asset_ours${i}`,
  accountId: 'acc',
  groupId: 'group_g',
  taskId: 'task_t',
  position: i,
  assetType: 'Image',
  name: `n${i}`,
  url: 'https://cdn.example.com/a.png',
  projectName: 'default',
  status: 'Pending',
  reason: null,
  createdAt: new Date(),
  updatedAt: new Date(),
});

describe('reviewOf', () => {
  it('approves an Active upstream asset under its own id', () => {
    expect(reviewOf(2, { asset_id: 'up_1', asset_url: 'asset://up_1', status: 'Active' })).toEqual({
      position: 2,
      status: 'Active',
      upstreamAssetId: 'up_1',
      upstreamAssetUrl: 'asset://up_1',
    });
  });
  it('rejects any other upstream status, keeping the upstream reason or naming the status', () => {
    expect(reviewOf(0, { asset_id: 'u', asset_url: 'asset://u', status: 'Rejected', reason: 'nudity' })).toEqual({
      position: 0,
      status: 'Rejected',
      reason: 'nudity',
    });
    expect(reviewOf(0, { asset_id: 'u', asset_url: 'asset://u', status: 'Failed' }).reason).toContain('Failed');
  });
  it('rejects an asset the upstream did not list, or approved under a reference motion-2.0 cannot carry', () => {
    expect(reviewOf(1, undefined)).toEqual({ position: 1, status: 'Rejected', reason: NO_REVIEW_REASON });
    expect(reviewOf(1, { asset_id: 'has space', asset_url: 'x', status: 'Active' })).toEqual({ position: 1, status: 'Rejected', reason: BAD_REFERENCE_REASON });
  });
});

describe('motionAssetUrlPattern', () => {
  it("is motion-2.0's own asset_urls rule", () => {
    expect(motionAssetUrlPattern().test('asset://asset_Ab9_-x')).toBe(true);
    expect(motionAssetUrlPattern().test('asset://has space')).toBe(false);
    expect(motionAssetUrlPattern().test('https://cdn.example.com/a.png')).toBe(false);
  });
});

describe('captureFor', () => {
  it.each([
    [300n, 3, 3, 300n],
    [300n, 2, 3, 200n],
    [300n, 0, 3, 0n],
    [100n, 1, 3, 33n],
    [100n, 0, 0, 0n],
  ])('price %s with %i of %i approved captures %s (never more than the hold)', (price, approved, total, expected) => {
    expect(captureFor(price, approved, total)).toBe(expected);
    expect(captureFor(price, approved, total) <= price).toBe(true);
  });
});

describe('AvatarReviewHandler', () => {
  it('records the reviews with the channel, lists our ids, and captures the approved share', async () => {
    const recorded: Array<{ taskId: string; channelId: string | null; reviews: readonly AssetReview[] }> = [];
    const handler = new AvatarReviewHandler({
      forTask: async () => [asset(0), asset(1), asset(2)],
      recordReviews: async (taskId, channelId, reviews) => void recorded.push({ taskId, channelId, reviews }),
    });
    const task = { id: 'task_t', price: 300n, channelId: 'ch-1' } as TaskRecord;
    const out = await handler.onComplete(task, {
      assets: [
        { asset_id: 'up_0', asset_url: 'asset://up_0', status: 'Active' },
        { asset_id: 'up_1', asset_url: 'asset://up_1', status: 'Rejected', reason: 'moderation' },
        { asset_id: 'up_2', asset_url: 'asset://up_2', status: 'Active' },
      ],
    });
    expect(recorded).toHaveLength(1);
    expect(recorded[0]!.channelId).toBe('ch-1');
    expect(recorded[0]!.reviews.map((r) => r.status)).toEqual(['Active', 'Rejected', 'Active']);
    expect(out.result.assets).toEqual([
      { asset_id: 'asset_ours0', asset_url: 'asset://asset_ours0', status: 'Active' },
      { asset_id: 'asset_ours1', asset_url: 'asset://asset_ours1', status: 'Rejected', reason: 'moderation' },
      { asset_id: 'asset_ours2', asset_url: 'asset://asset_ours2', status: 'Active' },
    ]);
    expect(out.result.usable_assets!.map((a) => a.asset_id)).toEqual(['asset_ours0', 'asset_ours2']);
    expect(out.captureAmount).toBe(200n);
  });
});
