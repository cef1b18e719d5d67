import type { Request } from 'express';

/** The full request path, independent of where a router is mounted (req.path is relative to the mount). */
export function fullPath(req: Request): string {
  const url = req.originalUrl || req.url;
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/**
 * A route's path inside a router mounted at `mount` (app.ts mounts each router under its prefix): the public path
 * stays one constant, the router registers the rest of it.
 */
export function underMount(mount: string, path: string): string {
  if (!path.startsWith(`${mount}/`)) throw new Error(`${path} is not under the mount ${mount}`);
  return path.slice(mount.length);
}
