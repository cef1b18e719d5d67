import type { Request } from 'express';

/** The full request path, independent of where a router is mounted (req.path is relative to the mount). */
export function fullPath(req: Request): string {
  const url = req.originalUrl || req.url;
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}
