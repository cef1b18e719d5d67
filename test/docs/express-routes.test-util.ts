import type { Router } from 'express';

/** One served operation: upper-case method and an Express path (`/v1/tasks/:id`). */
export interface ServedRoute {
  method: string;
  path: string;
}

/** The parts of an Express 5 (router 2.x) layer this walk reads. */
interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean | undefined> };
  handle: unknown;
  /** The path the layer was mounted with (router >= 2.2); `'/'` for `use(fn)` without a path. */
  rawPath?: unknown;
}

const asArray = (p: unknown): unknown[] => (Array.isArray(p) ? p.flat(Infinity) : [p]);

const isRouter = (h: unknown): h is { stack: Layer[] } => typeof h === 'function' && Array.isArray((h as unknown as { stack?: unknown }).stack);

function joinPath(prefix: string, p: unknown): string {
  if (typeof p !== 'string') throw new Error(`cannot document a non-string route path: ${String(p)}`);
  if (p === '/' && prefix !== '') return prefix;
  return `${prefix}${p}`;
}

/**
 * Every method + path a router serves, nested routers included. `router.all(...)` routes are skipped: in this
 * service they only answer 405 with `Allow` for the methods of the real routes on the same path.
 */
export function servedRoutes(router: Router | { stack: Layer[] }, prefix = ''): ServedRoute[] {
  const out: ServedRoute[] = [];
  for (const layer of (router as unknown as { stack: Layer[] }).stack) {
    if (layer.route) {
      const methods = Object.entries(layer.route.methods)
        .filter(([m, on]) => on && m !== '_all')
        .map(([m]) => m.toUpperCase());
      for (const p of asArray(layer.route.path)) for (const method of methods) out.push({ method, path: joinPath(prefix, p) });
    } else if (isRouter(layer.handle)) {
      for (const mount of asArray(layer.rawPath ?? '/')) {
        out.push(...servedRoutes(layer.handle, mount === '/' ? prefix : joinPath(prefix, mount)));
      }
    }
  }
  return out;
}

/**
 * `/api/accounts/:id` and `/api/accounts/{id}` both become `/api/accounts/{}`: parameter names may differ. Express 5's
 * wildcard `*key` (a parameter spanning slashes) is documented as `{key}` too.
 */
export const routeShape = (path: string): string => path.replace(/[:*][A-Za-z0-9_]+/g, '{}').replace(/\{[^}]*\}/g, '{}');

/**
 * The router factories `createApp` mounts and where, read from the source of app.ts: `app.use(<factory>(…))` or
 * `app.use('<mount>', <factory>(…))`. The test mounts the same factories at the same places.
 */
export function appRouterMounts(appSource: string): Array<{ factory: string; mount: string }> {
  const re = /app\.use\(\s*(?:'([^']*)'\s*,\s*)?([A-Za-z0-9_]+Router)\(/g;
  const out: Array<{ factory: string; mount: string }> = [];
  for (const m of appSource.matchAll(re)) out.push({ factory: m[2], mount: m[1] ?? '' });
  return out;
}
