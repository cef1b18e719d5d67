import type { AssetResult } from '@gmg/contracts';
import { parseMarkers, stateAt, type SimOutcome } from '../sim-scenario';
import type { SimAvatarAsset, SimTask } from '../sim-task.store';

export const SIM_ASSET_REJECT_REASON = 'Content moderation: the asset was rejected (simulated)';

/**
 * Review time of one asset at time scale 1: images 1.5 s, audio 2.5 s, videos 4 s, reviewed one after another
 * with a 0.5 s stagger (a real review queue works through a batch); moderation decides at 40 % of the asset's slot.
 */
const BASE_MS: Record<string, number> = { Image: 1500, Audio: 2500, Video: 4000 };
const STAGGER_MS = 500;

/** Plans the review of a batch from the markers in each asset's `name`. */
export function planAvatarReview(
  assets: ReadonlyArray<{ name: string }>,
  assetType: string,
  timeScale: number,
): { assets: SimAvatarAsset[]; durationMs: number; outcome: SimOutcome } {
  const base = BASE_MS[assetType] ?? BASE_MS.Image!;
  let outcome: SimOutcome = 'success';
  const planned = assets.map((a, i) => {
    const m = parseMarkers(a.name);
    // a failure or a stuck review of one asset is the whole batch's (the upstream task fails or never ends)
    if (m.outcome === 'fail') outcome = 'fail';
    else if (m.outcome === 'never' && outcome !== 'fail') outcome = 'never';
    const slot = (base + i * STAGGER_MS) * (m.slow ? 10 : 1);
    const rejected = m.outcome === 'moderation';
    return { name: a.name, rejected, decideAtMs: Math.round(slot * (rejected ? 0.4 : 1) * timeScale) };
  });
  const durationMs = Math.max(1, ...planned.map((a) => a.decideAtMs));
  return { assets: planned, durationMs, outcome };
}

/** The sim's asset id of position `i` of a batch task (motion-2.0 gets it back as `asset://<id>`). */
export const simAssetId = (taskId: string, i: number): string => `asset_${taskId.slice('task_'.length)}_${i}`;

/** `result.assets` / `usable_assets` of a finished batch: every asset decided, rejected ones with a reason. */
export function avatarResult(task: SimTask): { assets: AssetResult[]; usable_assets: AssetResult[] } {
  const assets: AssetResult[] = (task.avatar ?? []).map((a, i) => {
    const id = simAssetId(task.id, i);
    return a.rejected
      ? { asset_id: id, asset_url: `asset://${id}`, status: 'Rejected', reason: SIM_ASSET_REJECT_REASON }
      : { asset_id: id, asset_url: `asset://${id}`, status: 'Active' };
  });
  return { assets, usable_assets: assets.filter((a) => a.status === 'Active') };
}

/**
 * Why motion-2.0 cannot render these `asset_urls` here, or undefined: each must be an asset this simulator
 * approved in a batch that completed (an upstream knows only its own assets).
 */
export function unknownAssetProblem(urls: unknown, lookup: (taskId: string) => SimTask | undefined, now: number): string | undefined {
  if (!Array.isArray(urls)) return undefined;
  for (const [i, u] of urls.entries()) {
    const m = typeof u === 'string' ? /^asset:\/\/asset_([A-Za-z0-9]+)_(\d+)$/.exec(u) : null;
    const task = m ? lookup(`task_${m[1]}`) : undefined;
    const asset = task?.avatar?.[Number(m?.[2])];
    if (!task || !asset || asset.rejected || stateAt(task, now).status !== 'completed') {
      return `\`asset_urls.${i}\`: ${typeof u === 'string' ? u : 'item'} is not an approved asset of this upstream`;
    }
  }
  return undefined;
}
