import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { RenderCache } from './render-cache';
import sharp from 'sharp';

export type ImageFormat = 'jpeg' | 'png' | 'webp';
export const IMAGE_FORMATS: readonly ImageFormat[] = ['jpeg', 'png', 'webp'];

/** Largest image the simulator renders (a request above it would only burn CPU). */
export const MAX_IMAGE_SIDE = 12_000;
export const MAX_IMAGE_PIXELS = 36_000_000;

export const CONTENT_TYPES: Record<ImageFormat, string> = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };

/** Maps a requested format name to one the renderer produces (`jpg` is jpeg; unknown falls back to jpeg). */
export function normalizeImageFormat(f: string | undefined): ImageFormat {
  const v = (f ?? 'jpeg').toLowerCase();
  if (v === 'jpg') return 'jpeg';
  return (IMAGE_FORMATS as readonly string[]).includes(v) ? (v as ImageFormat) : 'jpeg';
}

/**
 * Renders cheap but real images: a 16x16 color field derived from `seed`, upscaled with a linear kernel into a smooth
 * gradient of exactly width x height, encoded with fast settings. Results are cached (bounded by bytes) and
 * concurrent requests for the same image share one render.
 */
export class ImageRenderer {
  private readonly cache: RenderCache;

  constructor(maxCacheBytes = 128 * 1024 * 1024) {
    this.cache = new RenderCache(new LRUCache<string, Buffer>({ maxSize: maxCacheBytes, sizeCalculation: (b) => Math.max(1, b.length) }));
  }

  render(seed: string, width: number, height: number, format: ImageFormat): Promise<Buffer> {
    if (!validSize(width, height)) return Promise.reject(new RangeError(`image size ${width}x${height} out of range`));
    return this.cache.get(`${seed}|${width}x${height}|${format}`, () => encode(seed, width, height, format));
  }
}

export function validSize(width: number, height: number): boolean {
  return (
    Number.isInteger(width) &&
    Number.isInteger(height) &&
    width >= 1 &&
    height >= 1 &&
    width <= MAX_IMAGE_SIDE &&
    height <= MAX_IMAGE_SIDE &&
    width * height <= MAX_IMAGE_PIXELS
  );
}

async function encode(seed: string, width: number, height: number, format: ImageFormat): Promise<Buffer> {
  const n = 16;
  const digest = createHash('sha256').update(seed).digest();
  const [r0, g0, b0, r1, g1, b1] = digest;
  const raw = Buffer.alloc(n * n * 3);
  for (let y = 0; y < n; y++) {
    for (let x = 0; x < n; x++) {
      const u = x / (n - 1);
      const v = y / (n - 1);
      const i = (y * n + x) * 3;
      raw[i] = Math.round(r0 * (1 - u) + r1 * u);
      raw[i + 1] = Math.round(g0 * (1 - v) + g1 * v);
      raw[i + 2] = Math.round(b0 * (1 - (u + v) / 2) + b1 * ((u + v) / 2));
    }
  }
  const img = sharp(raw, { raw: { width: n, height: n, channels: 3 } }).resize(width, height, { fit: 'fill', kernel: 'linear' });
  if (format === 'png') return img.png({ compressionLevel: 1, adaptiveFiltering: false }).toBuffer();
  if (format === 'webp') return img.webp({ quality: 70, effort: 0 }).toBuffer();
  return img.jpeg({ quality: 80, mozjpeg: false }).toBuffer();
}
