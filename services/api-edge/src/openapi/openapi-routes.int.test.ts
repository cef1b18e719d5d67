import request from 'supertest';
import { buildOpenApiDocument } from './openapi-document';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/**
 * The OpenAPI document and the routes agree, checked through real HTTP requests against the whole edge (createApp on
 * real Postgres and Redis, listening): every documented operation reaches a handler, every other method on a
 * documented path is refused as not served (405, or the unknown route's 404), and a path nobody serves is the
 * unknown route's 404. Nothing here reads the routers' internals or app.ts.
 */
type Obj = Record<string, any>;
const METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH'];
const PATHS = Object.entries(buildOpenApiDocument().paths as Obj).map(([path, item]) => ({
  path,
  documented: METHODS.filter((m) => (item as Obj)[m.toLowerCase()]),
}));

/** A documented path with a value for each parameter (`{task_id}`, `{key}`). */
const concrete = (path: string): string => path.replace(/\{[^}]+\}/g, 'route_probe_0123');

/** The unknown route's answer (routeNotFound, or the management API's own): 404 whose message says no route. */
const isUnknownRoute = (res: request.Response): boolean =>
  res.status === 404 && /^No (management )?route for /.test(String(res.body?.error?.message ?? res.body?.message ?? ''));
const notServed = (res: request.Response): boolean => isUnknownRoute(res) || res.status === 405;

let h: EdgeHarness;
let key: string;
beforeAll(async () => {
  // every optional router mounted (vendor callbacks need their signing key), so every documented path is served
  h = await startEdgeHarness({ env: { UPSTREAM_CALLBACK_SIGNING_KEY: 'openapi-routes-callback-key-0123456789abcdef' } });
  ({ key } = await h.newCustomer({ balance: 1 }));
});
afterAll(async () => {
  await h?.close();
});

/** A request as its caller would send it: the admin token on the operator's paths, an API key elsewhere. */
const send = (method: string, path: string): request.Test => {
  const token = /^\/(api|admin|metrics)(\/|$)/.test(path) ? h.config.adminToken : key;
  const r = request(h.baseUrl)[method.toLowerCase() as 'get'](path).set('Authorization', `Bearer ${token}`);
  return ['POST', 'PUT', 'PATCH'].includes(method) ? r.send({}) : r;
};

describe('the documented routes, through requests against the edge', () => {
  it('the document lists enough paths to mean something', () => {
    expect(PATHS.length).toBeGreaterThan(20);
  });

  it('a path nobody serves answers the unknown route 404, under every prefix and method', async () => {
    for (const path of ['/v1/no-such-route', '/api/no-such-route', '/no-such-route', '/v1/images/generations/extra/levels']) {
      for (const method of METHODS) {
        const res = await send(method, path);
        expect({ method, path, unknown: isUnknownRoute(res) }).toEqual({ method, path, unknown: true });
      }
    }
  });

  it('every documented operation reaches a handler; every other method of its path is not served', async () => {
    for (const { path, documented } of PATHS) {
      for (const method of METHODS) {
        const res = await send(method, concrete(path));
        const op = `${method} ${path}`;
        expect({ op, served: !notServed(res) }).toEqual({ op, served: documented.includes(method) });
      }
    }
  });
});
