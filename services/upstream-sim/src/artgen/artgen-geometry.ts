import type { ArtgenPanDirection } from '@gmg/contracts';

/** Canvas sizes of the simulated art suite: pure functions, so the rules are testable without HTTP. */
export interface Size {
  w: number;
  h: number;
}

/**
 * A base tile of a 1:1 prompt is 512 x 512 (its grid 1024 x 1024). Smaller than a real art suite's 1024 tiles on
 * purpose: zooms and chained pans multiply sides, and every result stays a real file rendered on demand.
 */
export const BASE_TILE_AREA = 512 * 512;
/** A grid is 2 x 2 tiles, so a tile of at most 4 MP keeps the grid within 16 MP. */
export const TILE_LIMIT = { side: 4096, pixels: 4096 * 1024 } as const;
export const SINGLE_LIMIT = { side: 8192, pixels: 16 * 1024 * 1024 } as const;
/** Ratios beyond 4:1 are clamped (the sim reads the ratio only to shape its canvas). */
const MAX_RATIO = 4;

const RATIO = /^\s*(\d{1,4}(?:\.\d{1,3})?)\s*:\s*(\d{1,4}(?:\.\d{1,3})?)\s*$/;

/** `16:9` → 16/9; anything else undefined. */
export function parseRatio(s: unknown): number | undefined {
  if (typeof s !== 'string') return undefined;
  const m = RATIO.exec(s);
  if (!m) return undefined;
  const r = Number(m[1]) / Number(m[2]);
  return Number.isFinite(r) && r > 0 ? Math.min(MAX_RATIO, Math.max(1 / MAX_RATIO, r)) : undefined;
}

/** The canvas ratio of a request: the prompt's `--ar` flag (parsed by the caller) wins over `size`; default 1:1. */
export function requestRatio(arFlag: string | undefined, size: unknown): number {
  return parseRatio(arFlag) ?? parseRatio(size) ?? 1;
}

const BLEND_RATIOS: Record<string, number> = { PORTRAIT: 2 / 3, SQUARE: 1, LANDSCAPE: 3 / 2 };

/** Blend `dimensions` → ratio; undefined for a value that is not one of PORTRAIT | SQUARE | LANDSCAPE. */
export function blendRatio(dimensions: unknown): number | undefined {
  if (dimensions === undefined) return 1;
  return typeof dimensions === 'string' ? BLEND_RATIOS[dimensions.toUpperCase()] : undefined;
}

const even8 = (n: number) => Math.max(8, Math.round(n / 8) * 8);

/** A tile of the base area with the given ratio, sides multiples of 8. */
export function baseTile(ratio: number): Size {
  return { w: even8(Math.sqrt(BASE_TILE_AREA * ratio)), h: even8(Math.sqrt(BASE_TILE_AREA / ratio)) };
}

/** Scales a size down (keeping its ratio) until it fits a limit; a size that fits is returned unchanged. */
export function fit(size: Size, limit: { side: number; pixels: number }): Size {
  const k = Math.min(1, limit.side / size.w, limit.side / size.h, Math.sqrt(limit.pixels / (size.w * size.h)));
  if (k >= 1) return { w: Math.round(size.w), h: Math.round(size.h) };
  return { w: Math.max(1, Math.floor(size.w * k)), h: Math.max(1, Math.floor(size.h * k)) };
}

export const upscaled = (s: Size): Size => fit({ w: s.w * 2, h: s.h * 2 }, SINGLE_LIMIT);

/**
 * A pan extends the canvas by half its other side: left/right add half the height to the width, up/down half the
 * width to the height, so chained pans of a square build a panorama 1.5, 2, 2.5 … times as wide.
 */
export function panned(s: Size, direction: ArtgenPanDirection): Size {
  const horizontal = direction === 'left' || direction === 'right';
  const grown = horizontal ? { w: s.w + Math.round(s.h / 2), h: s.h } : { w: s.w, h: s.h + Math.round(s.w / 2) };
  return fit(grown, SINGLE_LIMIT);
}

/** Zoom out: the new tiles show the parent image inside a canvas `ratio` times larger on each side. */
export function zoomed(s: Size, ratio: number): Size {
  return fit({ w: s.w * ratio, h: s.h * ratio }, TILE_LIMIT);
}

/** Tiles of a new grid made from an image of size `s` (variations, remixes, region vary): base area, same ratio. */
export function tileLike(s: Size): Size {
  return baseTile(s.w / s.h);
}
