import { ARTGEN_BASE_PATH } from './artgen.contract';
import { baseContract } from './base-contract';
import { AVATAR_ENDPOINT, BODY_CAPS } from './common-fields';
import { listModels } from './registry';
import type { ModelContract, Operation } from './types';

/** Every contract: the models' own, the art suite's actions, and the base contracts of custom model names. */
function allContracts(): ModelContract[] {
  const own = listModels().flatMap((m) => [...(m.contract ? [m.contract] : []), ...Object.values(m.actionContracts ?? {})]);
  const base = (['image_generation', 'video_generation'] as Operation[]).map((op) => baseContract('custom-model', op));
  return [...own, ...base];
}

const CAPS: ReadonlyMap<string, number> = (() => {
  const caps = new Map<string, number>();
  for (const c of allContracts()) caps.set(c.endpoint, Math.max(caps.get(c.endpoint) ?? 0, c.maxBodyBytes));
  // avatar submissions (spec 4.8) are URLs only: 20 assets of a 4096-character URL and a 200-character name
  caps.set(AVATAR_ENDPOINT, BODY_CAPS.urlsOnly);
  return caps;
})();

const ARTGEN_CAP = Math.max(...[...CAPS].filter(([p]) => p.startsWith(`${ARTGEN_BASE_PATH}/`)).map(([, n]) => n));

/**
 * The body cap of a submit path: the largest `maxBodyBytes` of the contracts served there (the edge refuses a larger
 * body before reading it; the model's own cap is checked once the body names it). Paths under the art suite's base
 * (`customId` actions, the bare path) take the largest of its actions. Undefined: no contract is served there.
 */
export function maxBodyBytesOfPath(path: string): number | undefined {
  return CAPS.get(path) ?? (path === ARTGEN_BASE_PATH || path.startsWith(`${ARTGEN_BASE_PATH}/`) ? ARTGEN_CAP : undefined);
}
