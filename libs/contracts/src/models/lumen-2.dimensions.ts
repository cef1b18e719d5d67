import { base64ImageSize, type ImageSize } from './image-header';

/** 1MP = 1,048,576 pixels (spec 4.6.1). */
export const MEGAPIXEL = 1_048_576;
export const MAX_OUTPUT_PIXELS = 4 * MEGAPIXEL;
export const MAX_TOTAL_PIXELS = 9 * MEGAPIXEL;
export const MIN_SIDE = 64;

export const LUMEN_TIERS = ['1MP', '2MP', '3MP', '4MP'] as const;
export type LumenTier = (typeof LUMEN_TIERS)[number];

export const LUMEN_RESOLUTION_ALIASES: Readonly<Record<string, LumenTier>> = Object.freeze({
  '512': '1MP',
  '512P': '1MP',
  '1M': '1MP',
  '1K': '2MP',
  '1024': '2MP',
  '2K': '3MP',
  '2048': '3MP',
  '4K': '4MP',
});

/** In the order of the spec (object keys would put the numeric ones first). */
export const LUMEN_ALIAS_NAMES = ['512', '512P', '1M', '1K', '1024', '2K', '2048', '4K'] as const;

export const LUMEN_RATIOS = ['1:1', '4:3', '3:4', '16:9', '9:16', '3:2', '2:3', '21:9', '9:21'] as const;
export type LumenRatio = (typeof LUMEN_RATIOS)[number];

/** The output dimension table of spec 4.6.1: ratio → [1MP, 2MP, 3MP, 4MP] as [width, height]. */
export const LUMEN_DIMENSIONS: Readonly<Record<LumenRatio, ReadonlyArray<readonly [number, number]>>> = Object.freeze({
  '1:1': [
    [1024, 1024],
    [1440, 1440],
    [1536, 1536],
    [2048, 2048],
  ],
  '4:3': [
    [1152, 864],
    [1664, 1248],
    [1824, 1360],
    [2336, 1760],
  ],
  '3:4': [
    [864, 1152],
    [1248, 1664],
    [1360, 1824],
    [1760, 2336],
  ],
  '16:9': [
    [1344, 752],
    [1920, 1072],
    [2048, 1152],
    [2720, 1536],
  ],
  '9:16': [
    [752, 1344],
    [1072, 1920],
    [1152, 2048],
    [1536, 2720],
  ],
  '3:2': [
    [1248, 832],
    [1728, 1152],
    [1872, 1248],
    [2496, 1664],
  ],
  '2:3': [
    [832, 1248],
    [1152, 1728],
    [1248, 1872],
    [1664, 2496],
  ],
  '21:9': [
    [1504, 640],
    [2176, 928],
    [2304, 992],
    [3072, 1312],
  ],
  '9:21': [
    [640, 1504],
    [928, 2176],
    [992, 2304],
    [1312, 3072],
  ],
});

export const PIXEL_STRING_PATTERN = '^[1-9][0-9]{0,5}x[1-9][0-9]{0,5}$';

export function tierOf(resolution: string): LumenTier {
  return (LUMEN_TIERS as readonly string[]).includes(resolution) ? (resolution as LumenTier) : LUMEN_RESOLUTION_ALIASES[resolution]!;
}

/** Billing tier of an explicit pixel size: the smallest tier whose pixel budget holds it. */
export function tierForPixels(pixels: number): LumenTier {
  return LUMEN_TIERS[Math.min(3, Math.max(0, Math.ceil(pixels / MEGAPIXEL) - 1))]!;
}

/** The listed ratio closest to a width/height (log distance), for `size: auto`. */
export function nearestRatio(size: ImageSize): LumenRatio {
  const target = Math.log(size.width / size.height);
  let best: LumenRatio = '1:1';
  let bestD = Infinity;
  for (const r of LUMEN_RATIOS) {
    const [w, h] = r.split(':').map(Number) as [number, number];
    const d = Math.abs(Math.log(w / h) - target);
    if (d < bestD) [best, bestD] = [r, d];
  }
  return best;
}

/** Sizes of URL references measured by the caller (the edge: its own uploads; the simulator: any it fetched). */
export type ReferenceSizes = ReadonlyMap<string, ImageSize>;

/**
 * Size of a reference: Base64 from its header; a URL only when the caller measured it (`known`), since the
 * gateway does not fetch client URLs.
 */
export function referenceSize(ref: string, known?: ReferenceSizes): ImageSize | undefined {
  if (/^https?:\/\//i.test(ref)) return known?.get(ref);
  try {
    return base64ImageSize(ref);
  } catch {
    return undefined;
  }
}

/**
 * `auto-upstream`: `size: auto` with a first reference URL nobody measured: its ratio (so the output size) is decided
 * by the upstream that fetches it; width/height then hold the tier's 1:1 size, for pixel budgets only.
 */
export type DimensionSource = 'width-height' | 'pixel-string' | 'ratio' | 'auto-reference' | 'auto-default' | 'auto-upstream';

export interface LumenDimensions {
  width: number;
  height: number;
  tier: LumenTier;
  ratio?: LumenRatio;
  source: DimensionSource;
}

/**
 * Output size by the spec's priority: width+height pair, then pixel-string `size`, then `resolution` with
 * aspect-ratio `size`, then 2MP 1:1. Inputs are already schema-valid.
 */
export function lumenDimensions(
  body: { width?: unknown; height?: unknown; size?: unknown; resolution?: unknown; image_urls?: unknown },
  known?: ReferenceSizes,
): LumenDimensions {
  if (typeof body.width === 'number' && typeof body.height === 'number') {
    return { width: body.width, height: body.height, tier: tierForPixels(body.width * body.height), source: 'width-height' };
  }
  const size = typeof body.size === 'string' ? body.size : '1:1';
  const pixel = /^(\d+)x(\d+)$/.exec(size);
  if (pixel) {
    const [w, h] = [Number(pixel[1]), Number(pixel[2])];
    return { width: w, height: h, tier: tierForPixels(w * h), source: 'pixel-string' };
  }
  const tier = tierOf(typeof body.resolution === 'string' ? body.resolution : '2MP');
  let ratio: LumenRatio;
  let source: DimensionSource = 'ratio';
  if (size === 'auto') {
    const ref = Array.isArray(body.image_urls) && typeof body.image_urls[0] === 'string' ? body.image_urls[0] : undefined;
    const first = ref === undefined ? undefined : referenceSize(ref, known);
    ratio = first ? nearestRatio(first) : '1:1';
    source = first ? 'auto-reference' : ref === undefined ? 'auto-default' : 'auto-upstream';
  } else {
    ratio = size as LumenRatio;
  }
  const [width, height] = LUMEN_DIMENSIONS[ratio][LUMEN_TIERS.indexOf(tier)]!;
  return { width, height, tier, ...(source === 'auto-upstream' ? {} : { ratio }), source };
}
