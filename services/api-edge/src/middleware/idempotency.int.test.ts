import express, { type RequestHandler } from 'express';
import request from 'supertest';
import { createLogger } from '@gmg/logger';
import { createRedis, type Redis } from '@gmg/queue';
import { TEST_REDIS_URL, testPrincipal, uniqueRedisPrefix, waitFor } from '@gmg/testing';
import { errorHandler } from '../http/error-handler';
import { setPrincipal } from '../http/principal';
import { createIdempotencyMiddleware } from './idempotency';

const principal = (keyId: string) => testPrincipal({ keyId, accountId: 'acc' });

describe('Idempotency-Key middleware (real Redis)', () => {
  let redis: Redis;
  let prefix: string;
  let runs: number;
  let gate: Promise<void>;
  let openGate: () => void;
  let failNext: boolean;
  /** The status the handler answers next (once), without doing its work: a refusal. */
  let refuseNext: number | undefined;
  const prefixes: string[] = [];

  /** A minimal app: fake principal from `x-test-key`, JSON body, the middleware, a handler that counts its runs. */
  const buildApp = (placement: 'after-parser' | 'before-parser') => {
    const app = express();
    const logger = createLogger({ service: 'test', level: 'silent' });
    const fakeAuth: RequestHandler = (req, res, next) => {
      setPrincipal(res, principal(req.get('x-test-key') ?? 'key-a'));
      next();
    };
    const json = express.json();
    const idem = createIdempotencyMiddleware({ redis, prefix, ttlSeconds: 60, bodyParsers: placement === 'before-parser' ? [json] : undefined });
    const chain = placement === 'after-parser' ? [fakeAuth, json, idem] : [fakeAuth, idem, json];
    app.post('/v1/things', ...chain, async (req, res) => {
      runs += 1;
      await gate;
      if (refuseNext) {
        const status = refuseNext;
        refuseNext = undefined;
        res.status(status).json({ error: { code: status, message: 'refused', type: 'refused' } });
        return;
      }
      if (failNext) {
        failNext = false;
        res.status(503).json({ error: { code: 503, message: 'down', type: 'service_unavailable' } });
        return;
      }
      res.setHeader('X-Custom', `run-${runs}`);
      // odd spacing on purpose: a replay must be these exact bytes, not a re-serialization
      res
        .status(201)
        .type('application/json')
        .send(`{"run": ${runs},  "echo":${JSON.stringify(req.body)}}`);
    });
    app.use(errorHandler(logger));
    return app;
  };

  beforeAll(() => {
    redis = createRedis(TEST_REDIS_URL);
  });
  beforeEach(() => {
    prefix = uniqueRedisPrefix();
    prefixes.push(prefix);
    runs = 0;
    failNext = false;
    refuseNext = undefined;
    gate = Promise.resolve();
  });
  afterAll(async () => {
    for (const p of prefixes) {
      const keys = await redis.keys(`${p}:*`);
      if (keys.length) await redis.del(...keys);
    }
    await redis.quit();
  });

  const closeGate = () => {
    gate = new Promise<void>((r) => {
      openGate = r;
    });
  };

  it('replays the first answer byte for byte with Idempotent-Replayed and does not run the handler again', async () => {
    const app = buildApp('after-parser');
    const first = await request(app).post('/v1/things').set('Idempotency-Key', 'k1').send({ b: 2, a: 1 });
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    // same JSON with keys in another order is the same request
    const again = await request(app).post('/v1/things').set('Idempotency-Key', 'k1').set('Content-Type', 'application/json').send('{"a":1,"b":2}');
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['content-type']).toBe(first.headers['content-type']);
    expect(again.headers['x-custom']).toBe('run-1');
    expect(again.text).toBe(first.text);
    expect(runs).toBe(1);
  });

  it('runs the handler once for 50 concurrent identical requests; the others get 409 or the replay', async () => {
    const app = buildApp('after-parser');
    const results = await Promise.all(Array.from({ length: 50 }, () => request(app).post('/v1/things').set('Idempotency-Key', 'same').send({ prompt: 'x' })));
    expect(runs).toBe(1);
    const originals = results.filter((r) => r.status === 201 && !r.headers['idempotent-replayed']);
    expect(originals).toHaveLength(1);
    for (const r of results) {
      if (r.status === 201) expect(r.text).toBe(originals[0].text);
      else expect(r.status).toBe(409);
    }
  });

  it('answers 409 while the first request is still running, then replays once it finished', async () => {
    const app = buildApp('after-parser');
    closeGate();
    const first = request(app)
      .post('/v1/things')
      .set('Idempotency-Key', 'slow')
      .send({ n: 1 })
      .then((r) => r);
    await waitFor(() => runs === 1, { what: 'first request in the handler' });
    const busy = await request(app).post('/v1/things').set('Idempotency-Key', 'slow').send({ n: 1 });
    expect(busy.status).toBe(409);
    expect(busy.body.error.type).toBe('invalid_request_error');
    openGate();
    const done = await first;
    const replay = await request(app).post('/v1/things').set('Idempotency-Key', 'slow').send({ n: 1 });
    expect([done.status, replay.status, replay.text === done.text, runs]).toEqual([201, 201, true, 1]);
  });

  it('rejects the same key with a different body with 422 invalid_request_error and creates nothing', async () => {
    const app = buildApp('after-parser');
    await request(app).post('/v1/things').set('Idempotency-Key', 'k2').send({ prompt: 'cat' }).expect(201);
    const other = await request(app).post('/v1/things').set('Idempotency-Key', 'k2').send({ prompt: 'dog' });
    expect(other.status).toBe(422);
    expect(other.body.error).toMatchObject({ code: 422, type: 'invalid_request_error' });
    expect(runs).toBe(1);
  });

  it('releases the key after a 5xx answer so a retry runs again', async () => {
    const app = buildApp('after-parser');
    failNext = true;
    await request(app).post('/v1/things').set('Idempotency-Key', 'k3').send({ p: 1 }).expect(503);
    const retry = await request(app).post('/v1/things').set('Idempotency-Key', 'k3').send({ p: 1 });
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(runs).toBe(2);
  });

  it.each([400, 401, 402, 403, 404, 429])(
    'does not keep a %i refusal: the same request with the same key runs again and its success is kept',
    async (status) => {
      const app = buildApp('after-parser');
      refuseNext = status;
      await request(app).post('/v1/things').set('Idempotency-Key', `k-${status}`).send({ p: 1 }).expect(status);
      const retry = await request(app).post('/v1/things').set('Idempotency-Key', `k-${status}`).send({ p: 1 });
      expect([retry.status, retry.headers['idempotent-replayed']]).toEqual([201, undefined]);
      const replay = await request(app).post('/v1/things').set('Idempotency-Key', `k-${status}`).send({ p: 1 });
      expect([replay.status, replay.headers['idempotent-replayed'], replay.text]).toEqual([201, 'true', retry.text]);
      expect(runs).toBe(2); // the refusal and the success; the replay ran nothing
    },
  );

  it('scopes keys to the API key: the same Idempotency-Key of another API key is a new request', async () => {
    const app = buildApp('after-parser');
    await request(app).post('/v1/things').set('x-test-key', 'key-a').set('Idempotency-Key', 'k4').send({ p: 1 }).expect(201);
    const b = await request(app).post('/v1/things').set('x-test-key', 'key-b').set('Idempotency-Key', 'k4').send({ p: 2 });
    expect(b.status).toBe(201);
    expect(runs).toBe(2);
  });

  it('rejects an Idempotency-Key longer than 255 characters with 400 naming the header', async () => {
    const app = buildApp('after-parser');
    const r = await request(app).post('/v1/things').set('Idempotency-Key', 'x'.repeat(256)).send({});
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/Idempotency-Key/);
    expect(runs).toBe(0);
  });

  it('without the header every request runs', async () => {
    const app = buildApp('after-parser');
    await request(app).post('/v1/things').send({ p: 1 }).expect(201);
    await request(app).post('/v1/things').send({ p: 1 }).expect(201);
    expect(runs).toBe(2);
  });

  it('works before the body parser when given bodyParsers (the parser then skips the consumed body)', async () => {
    const app = buildApp('before-parser');
    const a = await request(app).post('/v1/things').set('Idempotency-Key', 'k5').send({ p: 1 });
    const b = await request(app).post('/v1/things').set('Idempotency-Key', 'k5').send({ p: 1 });
    const c = await request(app).post('/v1/things').set('Idempotency-Key', 'k5').send({ p: 2 });
    expect([a.status, b.status, c.status, runs]).toEqual([201, 201, 422, 1]);
    expect(a.body.echo).toEqual({ p: 1 });
    expect(b.text).toBe(a.text);
  });

  it("before the body parser, the parser's refusal reaches the error handler and claims no key", async () => {
    const app = buildApp('before-parser');
    const bad = await request(app).post('/v1/things').set('Idempotency-Key', 'k6').set('content-type', 'application/json').send('{"p":');
    expect([bad.status, bad.body.error?.message, runs]).toEqual([400, 'Request body is not valid JSON', 0]);
    expect(await redis.keys(`${prefix}:*`)).toEqual([]);
    const good = await request(app).post('/v1/things').set('Idempotency-Key', 'k6').send({ p: 1 });
    expect([good.status, runs]).toEqual([201, 1]);
  });
});
