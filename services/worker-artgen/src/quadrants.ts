import sharp from 'sharp';
import type { QuadrantCutter } from '@gmg/upstream';

/**
 * The art worker's image library (sharp: libvips, prebuilt): an mj-proxy grid shown without tile links is cut into
 * its four tiles here, the one process that polls art tasks — so sharp is a production dependency of this service
 * alone (services/worker-artgen/package.json; the other services' bundles never load it).
 */
export const cutQuadrants: QuadrantCutter = async (image) => {
  const meta = await sharp(image).metadata();
  const width = Math.floor((meta.width ?? 0) / 2);
  const height = Math.floor((meta.height ?? 0) / 2);
  if (width < 1 || height < 1) return { tiles: [], width, height };
  const corners = [
    [0, 0],
    [width, 0],
    [0, height],
    [width, height],
  ] as const;
  const tiles = await Promise.all(corners.map(([left, top]) => sharp(image).extract({ left, top, width, height }).png().toBuffer()));
  return { tiles, width, height };
};
