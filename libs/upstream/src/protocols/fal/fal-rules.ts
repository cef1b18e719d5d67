import type { NormalizedRequest } from '@gmg/contracts';
import type { Unsupported } from '../../adapter';
import type { FamilyTranslation } from '../../translation';

/**
 * A fal family row. fal serves one model's modes on sub-paths of one id (`fal-ai/flux-2-pro` and
 * `fal-ai/flux-2-pro/edit`, `xai/grok-imagine-video/text-to-video` and `/image-to-video`), so the row says how the
 * request's mode extends the base id (the channel's `model_map` entry or `defaultUpstreamModel`).
 */
export interface FalFamily extends FamilyTranslation {
  endpoint?: (base: string, req: NormalizedRequest) => string;
}

type Check = (req: NormalizedRequest) => Unsupported | undefined;

export const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const imagesOf = (req: NormalizedRequest): string[] => list(req.upstreamBody.image_urls).map(String);
export const first = (v: unknown): unknown => list(v)[0];
export const second = (v: unknown): unknown => list(v)[1];
export const asString = (v: unknown): string => String(v);

/** The exact output size the contract derived (fal's `image_size` object), when it derived one. */
export function outputSize(req: NormalizedRequest): { width: number; height: number } | undefined {
  const { width, height } = req.expected;
  return typeof width === 'number' && typeof height === 'number' ? { width, height } : undefined;
}

/** A value of `field` fal cannot honour: refused with a message naming the field and what fal takes. */
export function refuseWhen(field: string, bad: (v: unknown, req: NormalizedRequest) => boolean, why: string): Check {
  return (req) => {
    const v = req.upstreamBody[field];
    if (v === undefined || !bad(v, req)) return undefined;
    return { field, message: `\`${field}\` ${JSON.stringify(v)} is not supported for ${req.requestedModel} through the fal protocol: ${why}` };
  };
}

/** Only these values pass (fal's enum for the input). */
export const onlyValues = (field: string, allowed: readonly unknown[], what = 'fal takes'): Check =>
  refuseWhen(field, (v) => !allowed.includes(v), `${what} ${allowed.map((a) => JSON.stringify(a)).join(', ')}`);

/** The first problem of several checks (a family's `refine`). */
export const firstProblem =
  (...checks: Check[]): Check =>
  (req) => {
    for (const c of checks) {
      const p = c(req);
      if (p) return p;
    }
    return undefined;
  };
