import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Direct dispatch of the hottest routes (docs/benchmarks.md): for one exact method and path, the handlers Express
 * would run — every matching middleware of the app and of its sub-routers, then the route's handlers — are listed
 * once, by walking the app's own router as Router.handle walks it per request, and then called in order by a
 * loop. Express's per-request work for those layers (matching each layer's path, a closure per layer and per
 * router, parameter processing) is skipped; the handlers, their order, `req.url` / `req.baseUrl` under a mount,
 * `req.route`, errors, `next('route')` and `next('router')` are as Express gives them. The list comes from the
 * app, never written by hand: a middleware added to the app joins it by itself.
 *
 * A route may end in one parameter segment (`GET /v1/tasks/:id`): the chain is listed with a sample value, and
 * holds for every value because every layer's path is checked to be blind to that segment — it cannot reach it
 * (fewer segments: decided by the fixed part; more: never matches), or it takes any value (the route itself), or
 * it is a literal there (`/v1/tasks/export`): that value, in any letter case, goes to Express. A value with `%`
 * (Express would decode it) goes to Express too.
 *
 * Only what the loop reproduces exactly is listed. Another path parameter on the way, `router.param` callbacks, an
 * error handler before the last listed handler, a layer whose matching throws, and — for a parameter route — a
 * regular-expression, wildcard or optional path part anywhere: that route stays with Express (the compile says
 * why). Any other request (another method or path, a trailing slash, other letter case, an absolute-form URL)
 * goes through Express as before. Not reproduced: the router's diagnostics-channel events for these layers, and a
 * handler rewriting `req.url` for the handlers after it (none of the gateway's does).
 */

interface RouteLike {
  stack: Array<{ method?: string; handle: HandlerFn }>;
  _handlesMethod(method: string): boolean;
}
type HandlerFn = ((...args: never[]) => unknown) & { stack?: unknown; params?: unknown; handle?: unknown };
interface LayerLike {
  handle: HandlerFn;
  rawPath?: unknown;
  route?: RouteLike;
  match(path: string): false | { params: Record<string, unknown>; path: string };
}
interface RouterLike {
  stack: LayerLike[];
  params: Record<string, unknown>;
}

/** One handler of a listed chain, with what Express would set on the request while it runs. */
interface Step {
  handle: RequestHandler;
  /** Characters of the path the mounts above it take off `req.url` (0 at the root), and the `req.baseUrl` they give. */
  trim: number;
  baseUrl: string;
  /** The Route it belongs to (`req.route` while it runs), and where `next('route')` goes: the step after the route. */
  route?: RouteLike;
  routeEnd: number;
  /** Where `next('router')` goes: the step after its router's steps; -1 inside the app's own router (leave it). */
  routerEnd: number;
  /** The name of the route's trailing parameter (`req.params[param]` while it runs), on a parameter route's own steps. */
  param?: string;
}

/** A route ending in one parameter segment: `/v1/tasks/:id` → prefix `/v1/tasks/`, param `id`. */
interface Template {
  pattern: string;
  prefix: string;
  param: string;
  /** Lower-cased path segments of the pattern (the last one is the parameter). */
  segments: string[];
  /** Literal values other layers give that segment: those requests go to Express. */
  literals: Set<string>;
}

const PARAM_SEGMENT = /^:[A-Za-z_$][\w$]*$/;

function templateOf(path: string): Template | undefined {
  const at = path.lastIndexOf('/');
  const last = path.slice(at + 1);
  if (!last.includes(':')) return undefined;
  const prefix = path.slice(0, at + 1);
  if (!PARAM_SEGMENT.test(last) || /[:*{}()?+]/.test(prefix)) throw new Unsupported('a parameter other than one whole trailing segment');
  return { pattern: path, prefix, param: last.slice(1), segments: path.toLowerCase().split('/').filter(Boolean), literals: new Set() };
}

/**
 * Whether a layer's full path (`full`: its mounts' paths and its own) could match some values of the template's
 * parameter segment and not others. It cannot when it has another number of segments (fewer: the fixed part alone
 * decides, the same for every value; more: it never matches) or a fixed segment that differs; a whole parameter
 * there matches every value alike (the walk then meets it with the sample); a literal there matches that value
 * only: it joins `literals`. Anything else is refused.
 */
function checkBlind(t: Template, full: unknown): void {
  if (typeof full !== 'string') throw new Unsupported('a regular-expression path beside a parameter route');
  if (/[*{}()?+]/.test(full)) throw new Unsupported('a wildcard or optional path part beside a parameter route');
  const segs = full.toLowerCase().split('/').filter(Boolean);
  if (segs.length !== t.segments.length) return;
  for (let i = 0; i < segs.length - 1; i++) if (!segs[i]!.startsWith(':') && segs[i] !== t.segments[i]) return;
  const last = segs[segs.length - 1]!;
  if (PARAM_SEGMENT.test(last)) return;
  if (last.includes(':')) throw new Unsupported('a partial parameter segment beside a parameter route');
  t.literals.add(last);
}

export interface DirectRoutes {
  /** Mount first (what is mounted before it runs first, as usual, and is not listed): answers the listed routes, passes every other request on. */
  middleware: RequestHandler;
  /** Lists the routes' chains from the app's router (call once every route is mounted); the ones left to Express, with why. */
  compile(appRouter: unknown, routes: ReadonlyArray<readonly [method: string, path: string]>): Array<{ route: string; reason: string }>;
  /**
   * Serves the listed routes before Express's own `app.handle` runs (the app's per-request set-up, its router's
   * state and its final handler are then made only for requests that reach Express). Needs the direct layer to be
   * the app router's first layer; false (nothing changed) otherwise. Call after compile, on the top-level app.
   */
  install(app: unknown): boolean;
  /** The routes answered directly, as `METHOD /path`. */
  readonly active: readonly string[];
}

const isRouter = (h: HandlerFn): h is HandlerFn & RouterLike =>
  typeof h === 'function' && Array.isArray(h.stack) && typeof h.handle === 'function' && typeof h.params === 'object' && h.params !== null;

class Unsupported extends Error {}

/**
 * Appends to `steps` the handlers a request `method path` meets in `stack` (`path`: what is left of it under the
 * mounts above, `trim` characters taken off, `baseUrl` theirs), as Router.handle and Route.dispatch choose them.
 */
function walk(
  stack: readonly LayerLike[], self: unknown, method: string, path: string, trim: number, baseUrl: string, steps: Step[], top: boolean,
  t: Template | undefined,
): void {
  const lower = method.toLowerCase();
  for (const layer of stack) {
    if (layer.handle === self) continue;
    const fullOf = (own: unknown): unknown => (typeof own === 'string' ? baseUrl + (!layer.route && own === '/' ? '' : own) : own);
    const full = fullOf(layer.rawPath);
    // a layer with several paths matches when one does: each is checked
    if (t) for (const f of Array.isArray(layer.rawPath) ? layer.rawPath.map(fullOf) : [full]) checkBlind(t, f);
    let m: ReturnType<LayerLike['match']>;
    try {
      m = layer.match(path);
    } catch {
      throw new Unsupported('a layer whose path matching throws');
    }
    if (!m) continue;
    const route = layer.route;
    // the parameter route itself (every layer of that exact path) takes the parameter; no other layer may take one
    const param = t && route && full === t.pattern ? t.param : undefined;
    const keys = Object.keys(m.params);
    if (param ? keys.length !== 1 || keys[0] !== param : keys.length > 0) throw new Unsupported('a path parameter on the way');
    if (route) {
      if (!route._handlesMethod(method)) continue;
      const start = steps.length;
      for (const r of route.stack) {
        if (r.method && r.method !== lower) continue;
        if (r.handle.length > 3) throw new Unsupported('an error handler inside the route');
        steps.push({ handle: r.handle as unknown as RequestHandler, trim, baseUrl, route, routeEnd: -1, routerEnd: NaN, ...(param ? { param } : {}) });
      }
      for (let i = start; i < steps.length; i++) steps[i]!.routeEnd = steps.length;
      continue;
    }
    const h = layer.handle;
    if (h.length > 3) {
      // skipped without an error; with one, Express gives it to the first error handler after the failing layer,
      // and the loop hands its error back to the app's router after the direct layer: the same handler only
      // when no listed step comes after this one (checked by the caller), at the app's own level
      if (!top) throw new Unsupported('an error handler inside a sub-router');
      steps.push({ handle: h as unknown as RequestHandler, trim: -1, baseUrl, routeEnd: -1, routerEnd: -1 });
      continue;
    }
    // a mount takes its path off req.url for the layer (Router.handle's trimPrefix)
    const taken = m.path;
    if (taken.length > 0) {
      if (taken !== path.substring(0, taken.length)) continue;
      const c = path[taken.length];
      if (c && c !== '/') continue;
    }
    const rest = path.slice(taken.length);
    const childPath = rest[0] === '/' ? rest : `/${rest}`;
    const childBase = baseUrl + (taken.endsWith('/') ? taken.slice(0, -1) : taken);
    const childTrim = trim + taken.length;
    if (isRouter(h)) {
      if (Object.keys(h.params).length > 0) throw new Unsupported('router.param callbacks');
      const start = steps.length;
      walk(h.stack, self, method, childPath, childTrim, childBase, steps, false, t);
      for (let i = start; i < steps.length; i++) if (Number.isNaN(steps[i]!.routerEnd)) steps[i]!.routerEnd = steps.length;
      continue;
    }
    steps.push({ handle: h as unknown as RequestHandler, trim: childTrim, baseUrl: childBase, routeEnd: -1, routerEnd: NaN });
  }
}

/** A value of a parameter segment for the walk (any value gives the same chain: checkBlind). */
const SAMPLE = 'direct-route-sample';

/** The steps of `method path` in the app's router, error handlers checked and dropped (see walk). */
export function listSteps(appRouter: unknown, self: unknown, method: string, path: string, t?: Template): Step[] {
  const router = appRouter as RouterLike;
  if (!router || !Array.isArray(router.stack)) throw new Unsupported('no router to walk');
  // only what comes after the direct layer: Express has run what comes before it already
  const at = router.stack.findIndex((l) => l.handle === self);
  if (at < 0) throw new Unsupported('the direct layer is not mounted on this router');
  const all: Step[] = [];
  walk(router.stack.slice(at + 1), self, method, t ? t.prefix + SAMPLE : path, 0, '', all, true, t);
  if (t?.literals.has(SAMPLE)) throw new Unsupported('the sample value is a literal path');
  if (t && !all.some((s) => s.param)) throw new Unsupported('no route of that path');
  let lastHandler = all.length - 1;
  while (lastHandler >= 0 && all[lastHandler]!.trim === -1) lastHandler--;
  if (all.slice(0, lastHandler + 1).some((s) => s.trim === -1)) throw new Unsupported('an error handler before the last handler');
  const steps = all.slice(0, lastHandler + 1);
  for (const s of steps) if (Number.isNaN(s.routerEnd)) s.routerEnd = -1;
  return steps;
}

/** Calls `steps` in order for one request, as Express would; hands errors and the end back to the app's router. */
function run(steps: readonly Step[], req: Request, res: Response, out: NextFunction, value?: string): void {
  const url = req.url;
  const base = req.baseUrl;
  let i = 0;
  let current: Step | undefined;
  // what the request holds now: written only when a step needs another value (a mount's url and baseUrl, a new
  // route and its params), as the router writes them per layer and Route.dispatch once per route
  let trim = 0;
  let baseUrl = '';
  let route: RouteLike | undefined;
  const leave = (err?: unknown): void => {
    req.url = url;
    req.baseUrl = base;
    out(err);
  };
  const next = (err?: unknown): void => {
    if (err === 'route') {
      err = undefined;
      if (current?.route) i = current.routeEnd;
    } else if (err === 'router') {
      err = undefined;
      if (!current || current.routerEnd === -1) return leave('router');
      i = current.routerEnd;
    }
    if (err) return leave(err);
    // every listed handler called next(): Express would find no further layer either (404 from the final handler)
    if (i >= steps.length) return leave('router');
    const step = steps[i++]!;
    current = step;
    if (step.trim !== trim) {
      trim = step.trim;
      if (trim === 0) req.url = url;
      else {
        const rest = url.slice(trim);
        req.url = rest[0] === '/' ? rest : `/${rest}`;
      }
    }
    if (step.baseUrl !== baseUrl) {
      baseUrl = step.baseUrl;
      req.baseUrl = base + baseUrl;
    }
    if (step.route !== route) {
      // a layer's own params, as Router.handle sets them when it matches it: the parameter on the route's steps
      route = step.route;
      if (route) (req as { route?: unknown }).route = route;
      req.params = step.param ? { [step.param]: value! } : {};
    }
    try {
      const r = step.handle(req, res, next) as unknown;
      if (r && typeof (r as Promise<unknown>).then === 'function') {
        (r as Promise<unknown>).then(undefined, (e: unknown) => next(e || new Error('Rejected promise')));
      }
    } catch (e) {
      next(e);
    }
  };
  req.params = {};
  next();
}

/** What Express's `app.handle` reads and writes on the top-level app (express/lib/application.js). */
interface AppLike {
  handle(req: unknown, res: unknown, callback?: unknown): void;
  request: object;
  response: object;
  settings: Record<string, unknown>;
  router: unknown;
}

export function directRoutes(): DirectRoutes {
  const table = new Map<string, Step[]>();
  const templates = new Map<string, { method: string; t: Template; steps: Step[] }>();
  /** Requests handed back to Express by an installed dispatch, with what the direct layer passes on (an error, 'router' or nothing). */
  const resumed = new WeakMap<object, unknown>();
  /** Runs the chain of a listed route and returns true; false (nothing done) for any other request. */
  const serve = (req: Request, res: Response, out: NextFunction, app?: AppLike): boolean => {
    if (table.size === 0 && templates.size === 0) return false;
    const url = req.url;
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    let steps = table.get(`${req.method} ${path}`);
    let value: string | undefined;
    if (!steps) {
      for (const { method, t, steps: chain } of templates.values()) {
        if (req.method !== method || !path.startsWith(t.prefix)) continue;
        const v = path.slice(t.prefix.length);
        if (v === '' || v.includes('/') || v.includes('%') || t.literals.has(v.toLowerCase())) return false;
        steps = chain;
        value = v;
        break;
      }
      if (!steps) return false;
    }
    if (app) {
      // what app.handle and the app router's handle do before the first layer (the direct layer is that layer)
      if (app.settings['x-powered-by']) res.setHeader('X-Powered-By', 'Express');
      (req as { res?: unknown }).res = res;
      (res as { req?: unknown }).req = req;
      Object.setPrototypeOf(req, app.request);
      Object.setPrototypeOf(res, app.response);
      if (!res.locals) res.locals = Object.create(null) as Record<string, unknown>;
      req.baseUrl = '';
      req.originalUrl = req.originalUrl || url;
    }
    run(steps, req, res, out, value);
    return true;
  };
  const middleware: RequestHandler = (req, res, next) => {
    if (resumed.has(req)) {
      const passed = resumed.get(req);
      resumed.delete(req);
      return next(passed);
    }
    if (!serve(req, res, next)) next();
  };
  return {
    middleware,
    compile(appRouter, routes) {
      const left: Array<{ route: string; reason: string }> = [];
      for (const [method, path] of routes) {
        const key = `${method.toUpperCase()} ${path}`;
        table.delete(key);
        templates.delete(key);
        try {
          const t = templateOf(path);
          const steps = listSteps(appRouter, middleware, method.toUpperCase(), path, t);
          if (t) templates.set(key, { method: method.toUpperCase(), t, steps });
          else table.set(key, steps);
        } catch (err) {
          if (!(err instanceof Unsupported)) throw err;
          left.push({ route: key, reason: err.message });
        }
      }
      return left;
    },
    install(app) {
      const a = app as unknown as AppLike;
      const stack = (a.router as RouterLike | undefined)?.stack;
      if (!Array.isArray(stack) || stack[0]?.handle !== middleware) return false;
      const expressHandle = a.handle;
      // the listed routes before Express's app.handle: no final handler, router state or first-layer match is built
      // for them; whatever the chain passes on (an error, the end) goes to Express, which meets the direct layer
      // first and passes it on from there, exactly as when the layer ran inside Express
      const out = (req: Request, res: Response) => (passed?: unknown): void => {
        resumed.set(req, passed);
        expressHandle.call(a, req, res);
      };
      a.handle = function handle(req: unknown, res: unknown, callback?: unknown): void {
        if (callback === undefined && serve(req as Request, res as Response, out(req as Request, res as Response), a)) return;
        expressHandle.call(a, req, res, callback);
      };
      return true;
    },
    get active() {
      return [...table.keys(), ...templates.keys()];
    },
  };
}
