import type { SimTask } from '../sim-task.store';
import { SIM_ASSET_REJECT_REASON, avatarResult, planAvatarReview, simAssetId, unknownAssetProblem } from './avatar-review';

const task = (names: string[], over: Partial<SimTask> = {}): SimTask => {
  const plan = planAvatarReview(
    names.map((name) => ({ name })),
    'Image',
    1,
  );
  return {
    id: 'task_abc',
    model: 'm',
    ack: 'C',
    expected: { kind: 'assets', count: names.length },
    outcome: plan.outcome,
    startedAt: 0,
    durationMs: plan.durationMs,
    avatar: plan.assets,
    ...over,
  };
};

describe('simulated avatar review', () => {
  it('reviews assets one after another; a [sim:moderation] asset is decided early and rejected alone', () => {
    const plan = planAvatarReview([{ name: 'a' }, { name: 'b [sim:moderation]' }, { name: 'c' }], 'Image', 1);
    expect(plan.outcome).toBe('success');
    expect(plan.assets.map((x) => x.rejected)).toEqual([false, true, false]);
    expect(plan.assets[0]!.decideAtMs).toBeLessThan(plan.assets[2]!.decideAtMs);
    expect(plan.assets[1]!.decideAtMs).toBeLessThan(plan.assets[0]!.decideAtMs);
    expect(plan.durationMs).toBe(plan.assets[2]!.decideAtMs);
  });

  it('scales with time and asset type, [sim:slow] per asset; [sim:fail] / [sim:never] decide the batch', () => {
    const img = planAvatarReview([{ name: 'a' }], 'Image', 1).durationMs;
    expect(planAvatarReview([{ name: 'a' }], 'Video', 1).durationMs).toBeGreaterThan(img);
    expect(planAvatarReview([{ name: 'a' }], 'Image', 0.5).durationMs).toBe(Math.round(img * 0.5));
    expect(planAvatarReview([{ name: 'a [sim:slow]' }], 'Image', 1).durationMs).toBe(img * 10);
    expect(planAvatarReview([{ name: 'a' }, { name: 'b [sim:fail]' }], 'Image', 1).outcome).toBe('fail');
    expect(planAvatarReview([{ name: 'a [sim:never]' }], 'Image', 1).outcome).toBe('never');
  });

  it('lists every asset, rejected ones with a reason, and only Active ones as usable', () => {
    const r = avatarResult(task(['a', 'b [sim:moderation]']));
    expect(r.assets).toEqual([
      { asset_id: simAssetId('task_abc', 0), asset_url: `asset://${simAssetId('task_abc', 0)}`, status: 'Active' },
      { asset_id: simAssetId('task_abc', 1), asset_url: `asset://${simAssetId('task_abc', 1)}`, status: 'Rejected', reason: SIM_ASSET_REJECT_REASON },
    ]);
    expect(r.usable_assets).toEqual([r.assets[0]]);
  });

  it('motion-2.0 may use only assets this simulator approved in a finished batch', () => {
    const t = task(['a', 'b [sim:moderation]']);
    const lookup = (id: string) => (id === t.id ? t : undefined);
    const done = t.durationMs + 1;
    expect(unknownAssetProblem([`asset://${simAssetId(t.id, 0)}`], lookup, done)).toBeUndefined();
    expect(unknownAssetProblem([`asset://${simAssetId(t.id, 1)}`], lookup, done)).toContain('asset_urls.0');
    expect(unknownAssetProblem([`asset://${simAssetId(t.id, 0)}`], lookup, 0)).toContain('asset_urls.0');
    expect(unknownAssetProblem(['asset://asset_elsewhere123'], lookup, done)).toContain('not an approved asset');
    expect(unknownAssetProblem(undefined, lookup, done)).toBeUndefined();
  });
});
