import express, { Router, type ErrorRequestHandler, type Express, type Request, type RequestHandler, type Response } from 'express';
import request from 'supertest';
import { directRoutes } from './direct-routes';

/**
 * Direct dispatch must run exactly what Express runs. One app shape, built twice — with the direct layer compiled
 * for `POST /hot` and `POST /v1/deep/hot`, and without it — answers the same requests; every handler appends what
 * it saw (its name, req.url, req.baseUrl, the route) to a trace sent back in the answer, so the two apps' answers
 * are compared whole. `x-mode` makes handlers throw, reject, call next('route') / next('router') or fall through.
 */

type Trace = string[];
const traceOf = (res: Response): Trace => (res.locals.trace ??= []) as Trace;
const mark = (name: string): RequestHandler => (req, res, next) => {
  traceOf(res).push(`${name} url=${req.url} base=${req.baseUrl} route=${(req.route as { path?: string } | undefined)?.path ?? '-'} params=${JSON.stringify(req.params)}`);
  const mode = String(req.headers['x-mode'] ?? '');
  if (mode === `throw@${name}`) throw new Error(`thrown by ${name}`);
  if (mode === `reject@${name}`) return Promise.reject(new Error(`rejected by ${name}`)) as unknown as void;
  if (mode === `route@${name}`) return next('route');
  if (mode === `router@${name}`) return next('router');
  if (mode === `respond@${name}`) {
    res.status(201).json({ by: name, trace: traceOf(res) });
    return;
  }
  next();
};
const asyncMark = (name: string): RequestHandler => async (req, res, next) => {
  await new Promise((r) => setImmediate(r));
  return mark(name)(req, res, next);
};
const finish: RequestHandler = (req, res) => {
  traceOf(res).push(`finish url=${req.url} base=${req.baseUrl}`);
  res.json({ by: 'finish', trace: traceOf(res), params: req.params });
};
const onError: ErrorRequestHandler = (err: Error, req, res, _next) => {
  res.status(500).json({ error: err.message, trace: traceOf(res), route: (req.route as { path?: string } | undefined)?.path ?? null, url: req.url });
};

/** `layer`: the direct layer inside Express (app.use); `installed`: and served before Express's app.handle (install). */
type Mode = 'layer' | 'installed';

function build(direct: false | Mode): { app: Express; left: Array<{ route: string; reason: string }>; active: readonly string[] } {
  const app = express();
  const d = directRoutes();
  if (direct) app.use(d.middleware);
  app.use(mark('root-a'), asyncMark('root-b'));
  app.get('/hot', mark('get-hot'), finish); // another method: never listed for POST
  const sub = Router();
  sub.use(mark('sub-use'));
  sub.post('/hot', mark('sub-route-1'), mark('sub-route-2'));
  sub.use('/nope', mark('sub-nope'));
  app.use(sub);
  app.use('/v1', mark('v1-mount'));
  const deep = Router();
  deep.use(mark('deep-use'));
  deep.use(/^\/ho/, mark('regexp-ho')); // matches, but not on a path segment's end: Express skips it
  deep.all('/hot', mark('deep-all'));
  deep.post('/hot', asyncMark('deep-post'), finish);
  deep.post('/hot', mark('deep-after'), finish);
  app.use('/v1/deep', deep);
  app.use('/hotter', mark('hotter')); // a longer path: no match
  app.post('/hot', mark('route-1'), asyncMark('route-2'), finish);
  app.post('/hot', mark('route-again'), finish);
  // a parameter route, with siblings that take some values of its segment and not others
  app.get('/items/special', mark('items-special'), finish);
  app.get(['/elsewhere', '/items/listed'], mark('items-listed'), finish);
  app.use('/items/mounted', mark('items-mounted'));
  app.post('/items/:id/extra', mark('items-extra'), finish);
  const items = Router();
  items.use(mark('items-use'));
  items.get('/items/:id', mark('items-1'), asyncMark('items-2'), finish);
  items.all('/items/:id', mark('items-all'), finish);
  app.use(items);
  app.use(mark('tail'));
  app.use((_req, res) => {
    res.status(404).json({ by: 'not-found', trace: traceOf(res) });
  });
  app.use(onError);
  const left = direct ? d.compile((app as unknown as { router: unknown }).router, [['POST', '/hot'], ['POST', '/v1/deep/hot'], ['GET', '/items/:id']]) : [];
  if (direct === 'installed' && !d.install(app)) throw new Error('install refused');
  return { app, left, active: d.active };
}

const plain = build(false);

describe.each(['layer', 'installed'] as const)('direct routes (%s)', (mode) => {
  const fast = build(mode);

  it('lists both routes (nothing in this shape is left to Express)', () => {
    expect(fast.left).toEqual([]);
    expect(fast.active).toEqual(['POST /hot', 'POST /v1/deep/hot', 'GET /items/:id']);
  });

  const names = ['root-a', 'root-b', 'sub-use', 'sub-route-1', 'sub-route-2', 'v1-mount', 'deep-use', 'deep-all', 'deep-post', 'deep-after', 'route-1', 'route-2', 'route-again', 'tail'];
  const modes = ['', ...names.flatMap((n) => ['throw', 'reject', 'route', 'router', 'respond'].map((m) => `${m}@${n}`))];
  const cases = ['/hot', '/hot?x=1&y=%20', '/v1/deep/hot', '/v1/deep/hot?q=1'].flatMap((path) => modes.map((mode) => [path, mode] as const));

  it.each(cases)('POST %s with x-mode "%s": the same answer as Express', async (path, mode) => {
    const [a, b] = await Promise.all([
      request(plain.app).post(path).set('x-mode', mode).send({}),
      request(fast.app).post(path).set('x-mode', mode).send({}),
    ]);
    expect({ status: b.status, text: b.text }).toEqual({ status: a.status, text: a.text });
    expect(a.text.length).toBeGreaterThan(0);
  });

  const itemNames = ['root-a', 'root-b', 'sub-use', 'items-use', 'items-1', 'items-2', 'items-all', 'tail'];
  const itemModes = ['', ...itemNames.flatMap((n) => ['throw', 'reject', 'route', 'router', 'respond'].map((m) => `${m}@${n}`))];
  const itemIds = ['abc', 'abc?x=1', 'special', 'SPECIAL', 'mounted', 'listed', 'a%20b', 'direct-route-sample', '', 'abc/', 'abc/extra'];
  it.each(itemIds.flatMap((id) => itemModes.map((mode) => [id, mode] as const)))('GET /items/%s with x-mode "%s": the same answer as Express', async (id, mode) => {
    const [a, b] = await Promise.all([
      request(plain.app).get(`/items/${id}`).set('x-mode', mode),
      request(fast.app).get(`/items/${id}`).set('x-mode', mode),
    ]);
    expect({ status: b.status, text: b.text }).toEqual({ status: a.status, text: a.text });
    expect(a.text.length).toBeGreaterThan(0);
  });

  it('a parameter route gives the handlers req.params as Express does', async () => {
    const r = await request(fast.app).get('/items/abc?x=1');
    expect(r.status).toBe(200);
    expect(r.body.params).toEqual({ id: 'abc' });
  });

  it.each([['GET', '/hot'], ['POST', '/HOT'], ['POST', '/hot/'], ['POST', '/v1/deep/hot/']] as const)('%s %s (not listed) goes through Express as before', async (method, path) => {
    const send = (app: Express) => (method === 'GET' ? request(app).get(path) : request(app).post(path).send({}));
    const [a, b] = await Promise.all([send(plain.app), send(fast.app)]);
    expect({ status: b.status, text: b.text }).toEqual({ status: a.status, text: a.text });
  });

  it('the trace shows mounts as Express gives them (url trimmed, baseUrl set, route set in the route)', async () => {
    const r = await request(fast.app).post('/v1/deep/hot?q=1').send({});
    expect(r.status).toBe(200);
    expect(r.body.trace).toEqual(expect.arrayContaining([
      'v1-mount url=/deep/hot?q=1 base=/v1 route=- params={}',
      'deep-use url=/hot?q=1 base=/v1/deep route=- params={}',
      'deep-all url=/hot?q=1 base=/v1/deep route=/hot params={}',
      'finish url=/hot?q=1 base=/v1/deep',
    ]));
  });
});

describe('direct routes', () => {
  it('installed, a listed route never enters the app router; an unlisted one and a hand-back do', async () => {
    const { app } = build('installed');
    const router = (app as unknown as { router: { handle: (...a: unknown[]) => unknown } }).router;
    const original = router.handle;
    let entered = 0;
    router.handle = function (this: unknown, ...args: unknown[]) {
      entered++;
      return original.apply(this, args);
    };
    try {
      expect((await request(app).post('/hot').send({})).status).toBe(200);
      expect(entered).toBe(0);
      expect((await request(app).get('/items/abc')).status).toBe(200);
      expect(entered).toBe(0);
      expect((await request(app).post('/hot').set('x-mode', 'throw@route-1').send({})).status).toBe(500); // the error goes to Express
      expect(entered).toBe(1);
      expect((await request(app).get('/hot')).status).toBe(200); // not listed
      expect(entered).toBe(2);
    } finally {
      router.handle = original;
    }
  });

  describe('shapes it leaves to Express, saying why', () => {
    const compile = (shape: (app: Express) => void) => {
      const app = express();
      const d = directRoutes();
      app.use(d.middleware);
      shape(app);
      return { left: d.compile((app as unknown as { router: unknown }).router, [['POST', '/a/b']]), active: d.active };
    };
    const compileParam = (shape: (app: Express) => void) => {
      const app = express();
      const d = directRoutes();
      app.use(d.middleware);
      shape(app);
      app.get('/a/:id', ok);
      return { left: d.compile((app as unknown as { router: unknown }).router, [['GET', '/a/:id']]), active: d.active };
    };
    const ok: RequestHandler = (_req, res) => {
      res.end();
    };

    it.each([
      ['a path parameter on the way', (app: Express) => app.use('/:x', (_q: Request, _s: Response, n: () => void) => n(), ok)],
      ['router.param callbacks', (app: Express) => {
        const r = Router();
        r.param('id', (_q, _s, n) => n());
        r.post('/a/b', ok);
        app.use(r);
      }],
      ['an error handler inside a sub-router', (app: Express) => {
        const r = Router();
        r.post('/a/b', ok);
        r.use(onError);
        app.use(r);
      }],
      ['an error handler before the last handler', (app: Express) => {
        app.use(onError);
        app.post('/a/b', ok);
      }],
    ] as const)('%s', (reason, shape) => {
      const { left, active } = compile(shape);
      expect(left).toEqual([{ route: 'POST /a/b', reason }]);
      expect(active).toEqual([]);
    });

    it.each([
      ['a partial parameter segment beside a parameter route', (app: Express) => app.get('/a/pre-:x', ok)],
      ['a regular-expression path beside a parameter route', (app: Express) => app.use(/^\/zz/, ok)],
      ['a regular-expression path beside a parameter route', (app: Express) => app.get(['/zz', /^\/yy/], ok)],
      ['a partial parameter segment beside a parameter route', (app: Express) => app.get(['/zz', '/a/b-:c'], ok)],
      ['a wildcard or optional path part beside a parameter route', (app: Express) => app.use('/a/*rest', ok)],
      ['a path parameter on the way', (app: Express) => app.use('/:x/:y', (_q: Request, _s: Response, n: () => void) => n())],
    ] as const)('a parameter route beside %s', (reason, shape) => {
      const { left, active } = compileParam(shape);
      expect(left).toEqual([{ route: 'GET /a/:id', reason }]);
      expect(active).toEqual([]);
    });

    it('a parameter route beside a literal of its segment, a longer path and a mount elsewhere is fine', () => {
      const { left, active } = compileParam((app) => {
        app.get('/a/literal', ok);
        app.get(['/c', '/a/listed', '/d/:e'], ok);
        app.post('/a/:id/more', ok);
        app.use('/b', ok);
      });
      expect(left).toEqual([]);
      expect(active).toEqual(['GET /a/:id']);
    });

    it('a middleware mounted before the direct layer runs once, before the listed ones; compile needs the layer mounted; install needs it first', async () => {
      const app = express();
      app.use(mark('before'));
      const d = directRoutes();
      app.use(d.middleware);
      app.post('/a/b', mark('after'), finish);
      expect(d.compile((app as unknown as { router: unknown }).router, [['POST', '/a/b']])).toEqual([]);
      // not the first layer: install refuses and leaves the app's handle as it was
      const handle = (app as unknown as { handle: unknown }).handle;
      expect(d.install(app)).toBe(false);
      expect((app as unknown as { handle: unknown }).handle).toBe(handle);
      const r = await request(app).post('/a/b').send({});
      expect(r.body.trace.map((line: string) => line.split(' ')[0])).toEqual(['before', 'after', 'finish']);
      const unmounted = directRoutes();
      expect(unmounted.compile((app as unknown as { router: unknown }).router, [['POST', '/a/b']])).toEqual([
        { route: 'POST /a/b', reason: 'the direct layer is not mounted on this router' },
      ]);
    });

    it('an error handler after the last handler is fine', () => {
      const { left, active } = compile((app) => {
        app.post('/a/b', ok);
        app.use(onError);
      });
      expect(left).toEqual([]);
      expect(active).toEqual(['POST /a/b']);
    });
  });
});
