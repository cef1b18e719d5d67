import { createHash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from '@gmg/logger';
import { CONTENT_TYPES, normalizeImageFormat, validSize, type ImageRenderer } from './media/image-renderer';
import { MAX_VIDEO_SECONDS, type VideoRenderer } from './media/video-renderer';
import { sendError } from './sim-errors';

const IMAGE_NAME = /^(task_[A-Za-z0-9]{1,64})-(\d{1,3})-(\d{1,5})x(\d{1,5})\.(jpg|png|webp)$/;
const VIDEO_NAME = /^(task_[A-Za-z0-9]{1,64})-(\d{1,3})-(\d{1,3}(?:\.\d{1,3})?)s\.mp4$/;

/** Eight palettes, not one per task: a load test hitting many links of one size mostly hits the render cache. */
function paletteOf(name: string): string {
  return `palette-${createHash('sha1').update(name).digest()[0] % 8}`;
}

/** A rendered file, cacheable like a CDN's: a link's bytes never change. */
export function sendRendered(res: Response, type: string, buf: Buffer): void {
  res.setHeader('Content-Type', type);
  res.setHeader('Cache-Control', 'public, max-age=86400, immutable');
  res.send(buf);
}

/** GET /files/<name>: renders (or serves from cache) the file a result link names. Public, like a CDN link. */
export function filesHandler(deps: { images: ImageRenderer; videos: VideoRenderer; log: Logger }): RequestHandler {
  return async (req: Request, res: Response) => {
    const name = String(req.params.name ?? '');
    try {
      const img = IMAGE_NAME.exec(name);
      if (img) {
        const [, taskId, index, w, h, ext] = img;
        const width = Number(w);
        const height = Number(h);
        if (!validSize(width, height)) return sendError(res, 404, 'not_found_error', 'file not found');
        const format = normalizeImageFormat(ext);
        return sendRendered(res, CONTENT_TYPES[format], await deps.images.render(paletteOf(`${taskId}-${index}`), width, height, format));
      }
      const vid = VIDEO_NAME.exec(name);
      if (vid) {
        const seconds = Number(vid[3]);
        if (!(seconds > 0 && seconds <= MAX_VIDEO_SECONDS)) return sendError(res, 404, 'not_found_error', 'file not found');
        if (!deps.videos.available) return sendError(res, 503, 'service_unavailable', 'video rendering is not available on this platform');
        return sendRendered(res, 'video/mp4', await deps.videos.render(seconds));
      }
      sendError(res, 404, 'not_found_error', 'file not found');
    } catch (e) {
      deps.log.error({ err: e, file: name }, 'sim file render failed');
      sendError(res, 500, 'server_error', 'file rendering failed');
    }
  };
}
