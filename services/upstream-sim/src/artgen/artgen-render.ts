import { createHash } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { LRUCache } from 'lru-cache';
import sharp from 'sharp';
import type { Logger } from '@gmg/logger';
import { RenderCache } from '../media/render-cache';
import { validSize } from '../media/image-renderer';
import type { VideoRenderer } from '../media/video-renderer';
import { sendRendered } from '../files.handler';
import { sendError } from '../sim-errors';
import type { Size } from './artgen-geometry';

/** Every art video is this long (the suite's clips are about 5 s). */
export const ART_VIDEO_SECONDS = 5;

const SEED = '[A-Za-z0-9]{1,64}(?:\\.[1-4])?';
const IMAGE_NAME = new RegExp(`^art-(${SEED})(-grid)?-(\\d{1,5})x(\\d{1,5})\\.png$`);
const VIDEO_NAME = new RegExp(`^art-(${SEED})-(\\d{1,2})s\\.mp4$`);

/** File names carry the seed and size, so a link renders the same file even after its task left the store. */
export const imageName = (seed: string, s: Size): string => `art-${seed}-${s.w}x${s.h}.png`;
export const gridName = (seed: string, tile: Size): string => `art-${seed}-grid-${tile.w * 2}x${tile.h * 2}.png`;
export const videoName = (seed: string): string => `art-${seed}-${ART_VIDEO_SECONDS}s.mp4`;

function hsv(h: number, s: number, v: number): [number, number, number] {
  const f = (n: number) => {
    const k = (n + h / 60) % 6;
    return Math.round(255 * (v - v * s * Math.max(0, Math.min(k, 4 - k, 1))));
  };
  return [f(5), f(3), f(1)];
}

/**
 * A 16 x 16 field smoothly enlarged: a hue band with soft blobs from the seed's digest. Tile i of a seed sits 90°
 * of hue from its neighbours, so the four tiles of a grid always look (and measure) distinct; `<seed>.<i>` renders
 * the same picture at any size, which is what an upscale of tile i shows.
 */
async function renderTile(seed: string, s: Size): Promise<Buffer> {
  const [root, idx] = seed.split('.');
  const d = createHash('sha256').update(root).digest();
  const hue = (d.readUInt16BE(0) % 360) + (idx === undefined ? 45 : (Number(idx) - 1) * 90);
  const blobs = createHash('sha256').update(seed).digest();
  const n = 16;
  const raw = Buffer.alloc(n * n * 3);
  for (let y = 0; y < n; y++) {
    for (let x = 0; x < n; x++) {
      const bit = (blobs[(y * n + x) >> 3] >> (x & 7)) & 1;
      const rgb = hsv((hue + 30 * (x / (n - 1)) + 360) % 360, 0.55 + 0.35 * (y / (n - 1)), 0.65 + 0.25 * bit);
      raw.set(rgb, (y * n + x) * 3);
    }
  }
  return sharp(raw, { raw: { width: n, height: n, channels: 3 } })
    .resize(s.w, s.h, { fit: 'fill', kernel: 'linear' })
    .png({ compressionLevel: 1, adaptiveFiltering: false })
    .toBuffer();
}

/** Art images rendered lazily, cached by bytes; a grid reuses its four cached tiles, pixel for pixel. */
export class ArtRenderer {
  private readonly cache: RenderCache;

  constructor(maxCacheBytes = 96 * 1024 * 1024) {
    this.cache = new RenderCache(new LRUCache<string, Buffer>({ maxSize: maxCacheBytes, sizeCalculation: (b) => Math.max(1, b.length) }));
  }

  image(seed: string, s: Size): Promise<Buffer> {
    return this.cache.get(`${seed}|${s.w}x${s.h}`, () => renderTile(seed, s));
  }

  grid(seed: string, tile: Size): Promise<Buffer> {
    return this.cache.get(`${seed}|grid|${tile.w}x${tile.h}`, async () => {
      const tiles = await Promise.all([1, 2, 3, 4].map((i) => this.image(`${seed}.${i}`, tile)));
      return sharp({ create: { width: tile.w * 2, height: tile.h * 2, channels: 3, background: '#000' } })
        .composite(tiles.map((input, i) => ({ input, left: (i % 2) * tile.w, top: Math.floor(i / 2) * tile.h })))
        .png({ compressionLevel: 1, adaptiveFiltering: false })
        .toBuffer();
    });
  }
}

/** GET /files/art-…: renders (or serves from cache) an art file; other names go to the next handler. */
export function artFilesHandler(deps: { art: ArtRenderer; videos: VideoRenderer; log: Logger }): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    const name = String(req.params.name ?? '');
    if (!name.startsWith('art-')) return next();
    try {
      const img = IMAGE_NAME.exec(name);
      if (img) {
        const [, seed, grid, w, h] = img;
        const size = { w: Number(w), h: Number(h) };
        if (!validSize(size.w, size.h) || (grid && (size.w % 2 || size.h % 2 || seed.includes('.')))) {
          return sendError(res, 404, 'not_found_error', 'file not found');
        }
        const buf = grid ? await deps.art.grid(seed, { w: size.w / 2, h: size.h / 2 }) : await deps.art.image(seed, size);
        return sendRendered(res, 'image/png', buf);
      }
      const vid = VIDEO_NAME.exec(name);
      if (vid && Number(vid[2]) === ART_VIDEO_SECONDS) {
        if (!deps.videos.available) return sendError(res, 503, 'service_unavailable', 'video rendering is not available on this platform');
        return sendRendered(res, 'video/mp4', await deps.videos.render(ART_VIDEO_SECONDS));
      }
      sendError(res, 404, 'not_found_error', 'file not found');
    } catch (e) {
      deps.log.error({ err: e, file: name }, 'sim art file render failed');
      sendError(res, 500, 'server_error', 'file rendering failed');
    }
  };
}
