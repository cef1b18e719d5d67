import { taskViewKey } from '@gmg/queue';
import request from 'supertest';
import { ApiKeyRepository, TaskRepository } from '@gmg/db';
import { waitFor } from '@gmg/testing';
import { startEdgeHarness, type EdgeHarness } from './edge.test-kit';

let h: EdgeHarness;
let key: string;
let accountId: string;
beforeAll(async () => {
  h = await startEdgeHarness({ env: { MAX_BODY_BYTES: '65536', AUTH_CACHE_TTL_MS: '500' } });
  ({ key, accountId } = await h.newCustomer({ balance: 5 }));
});
afterAll(async () => {
  await h?.close();
});

const IMAGES = '/v1/images/generations';
const lumen = { model: 'lumen-2-pro', prompt: 'a lighthouse' };
const api = () => request(h.baseUrl);
const auth = (k = key) => ({ Authorization: `Bearer ${k}` });

async function submit(k = key): Promise<string> {
  const res = await api().post(IMAGES).set(auth(k)).send(lumen);
  expect(res.status).toBe(200);
  return res.body.data[0].task_id as string;
}

describe('authentication', () => {
  it.each([
    ['no Authorization header', {}],
    ['a non-Bearer scheme', { Authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
    ['an unknown key', { Authorization: 'Bearer sk-unknownunknownunknownunknownunknown0000' }],
    ['an empty Bearer value', { Authorization: 'Bearer ' }],
  ])('answers 401 authentication_error for %s', async (_what, headers) => {
    const res = await api()
      .get('/v1/models')
      .set(headers as Record<string, string>);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: { code: 401, type: 'authentication_error', message: expect.any(String) } });
  });

  it("does not take x-api-key outside the messages endpoint and its clients' model list", async () => {
    const res = await api().get('/v1/tasks/task_x').set('x-api-key', key);
    expect(res.status).toBe(401);
  });

  it('stops accepting a revoked key within the auth cache TTL (500 ms here)', async () => {
    const c = await h.newCustomer({ balance: 1 });
    expect((await api().get('/v1/models').set(auth(c.key))).status).toBe(200);
    await new ApiKeyRepository(h.db.dataSource).revoke(c.keyId);
    // the TTL plus one polling interval and a request's own time; the exact expiry is unit-tested with a clock
    await waitFor(async () => (await api().get('/v1/models').set(auth(c.key))).status === 401, {
      timeoutMs: 500 + 250,
      intervalMs: 50,
      what: 'revoked key rejected',
    });
  });

  it('checks the key before parsing the body (invalid JSON without a key is 401)', async () => {
    const res = await api().post(IMAGES).set('Content-Type', 'application/json').send('{nope');
    expect(res.status).toBe(401);
  });
});

describe('error shapes', () => {
  it('answers invalid JSON with 400 invalid_request_error', async () => {
    const res = await api().post(IMAGES).set(auth()).set('Content-Type', 'application/json').send('{"model": "lumen-2-pro",');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { code: 400, type: 'invalid_request_error', message: expect.stringMatching(/JSON/) } });
  });

  it('answers an unknown route with 404 in the error shape', async () => {
    const res = await api().get('/v1/nothing-here').set(auth());
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: { code: 404, type: 'not_found_error', message: expect.stringContaining('/v1/nothing-here') } });
    const root = await api().get('/nope');
    expect(root.status).toBe(404);
    expect(root.body.error.code).toBe(404);
  });

  it('answers a wrong method on a known path with 405 and Allow', async () => {
    const res = await api().get(IMAGES).set(auth());
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('POST');
    expect(res.body).toEqual({ error: { code: 405, type: 'invalid_request_error', message: expect.stringContaining('POST') } });
    const tasks = await api().delete('/v1/tasks/task_abc').set(auth());
    expect(tasks.status).toBe(405);
    expect(tasks.headers.allow).toBe('GET, HEAD');
  });

  it('answers an oversized body with 413 in the error shape and creates no task', async () => {
    const taskCount = async () =>
      Number(((await h.db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [accountId])) as Array<{ n: number }>)[0].n);
    // the count sees this account's tasks: a body within the limit moves it
    const start = await taskCount();
    await submit();
    const before = await taskCount();
    expect(before).toBe(start + 1);
    const res = await api()
      .post(IMAGES)
      .set(auth())
      .send({ ...lumen, prompt: 'x'.repeat(100_000) });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ error: { code: 413, type: 'invalid_request_error', message: expect.stringContaining('65536') } });
    expect(await taskCount()).toBe(before);
  });

  it('answers a non-JSON content type on a JSON route with 415', async () => {
    const res = await api().post(IMAGES).set(auth()).set('Content-Type', 'text/plain').send('model=lumen-2-pro');
    expect(res.status).toBe(415);
    expect(res.body.error).toMatchObject({ code: 415, type: 'invalid_request_error' });
  });

  it('answers an empty POST with 400 naming model, not 415', async () => {
    const res = await api().post(IMAGES).set(auth()).set('Content-Length', '0');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 400, type: 'invalid_request_error', message: expect.stringContaining('model') });
  });

  it('gives every response an X-Request-Id', async () => {
    const res = await api().get('/healthz');
    expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
  });
});

describe('GET /v1/tasks/:id', () => {
  it("returns the caller's own task from the Redis view", async () => {
    const id = await submit();
    const res = await api().get(`/v1/tasks/${id}`).set(auth());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      code: 200,
      data: expect.objectContaining({ id, status: 'pending', progress: 0, model: 'lumen-2-pro', cost: expect.any(Number), created: expect.any(Number) }),
    });
    expect(res.body.data.cost).toBeGreaterThan(0);
  });

  it('answers a task of another account exactly like a missing one: 404 not_found_error', async () => {
    const id = await submit();
    const other = await h.newCustomer({ balance: 1 });
    const missingId = 'task_000000000000000000000000';
    const foreign = await api().get(`/v1/tasks/${id}`).set(auth(other.key));
    const missing = await api().get(`/v1/tasks/${missingId}`).set(auth(other.key));
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(foreign.body).toEqual({ error: { code: 404, type: 'not_found_error', message: `Task ${id} not found` } });
    expect(missing.body).toEqual({ error: { code: 404, type: 'not_found_error', message: `Task ${missingId} not found` } });
    // also when only Postgres knows the task
    await h.redis.del(taskViewKey(h.prefix, id));
    const foreignPg = await api().get(`/v1/tasks/${id}`).set(auth(other.key));
    expect(foreignPg.body).toEqual(foreign.body);
  });

  it('falls back to Postgres when the view is gone and re-warms it', async () => {
    const id = await submit();
    await h.redis.del(taskViewKey(h.prefix, id));
    const res = await api().get(`/v1/tasks/${id}`).set(auth());
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id, status: 'pending' });
    const view = JSON.parse((await h.redis.get(taskViewKey(h.prefix, id)))!);
    expect(view).toMatchObject({ accountId, task: { id } });
  });

  it('returns a failed task with HTTP 200, code 200, data.error and cost 0', async () => {
    const id = await submit();
    await new TaskRepository(h.db.dataSource).fail(id, { code: 'task_failed', message: 'Banned prompt detected' });
    await h.redis.del(taskViewKey(h.prefix, id));
    const res = await api().get(`/v1/tasks/${id}`).set(auth());
    expect(res.status).toBe(200);
    expect(res.body.code).toBe(200);
    expect(res.body.data).toMatchObject({ id, status: 'failed', cost: 0, error: { code: 'task_failed', message: 'Banned prompt detected' } });
  });

  it('answers a malformed id with 404', async () => {
    const res = await api().get('/v1/tasks/not-a-task').set(auth());
    expect(res.status).toBe(404);
    expect(res.body.error.type).toBe('not_found_error');
  });
});

describe('catalog', () => {
  it('lists the models of the key in the list envelope, basic fields without expand', async () => {
    const res = await api().get('/v1/models').set(auth());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, object: 'list' });
    const pro = res.body.data.find((m: { id: string }) => m.id === 'lumen-2-pro');
    expect(pro).toEqual({
      id: 'lumen-2-pro',
      object: 'model',
      created: expect.any(Number),
      owned_by: expect.any(String),
      supported_endpoint_types: expect.any(Array),
    });
  });

  it('adds category and capability tags with expand=category and filters by category', async () => {
    const res = await api().get('/v1/models?expand=category&category=image').set(auth());
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeGreaterThan(0);
    for (const m of res.body.data) expect(m.category).toBe('image');
    expect(res.body.data.find((m: { id: string }) => m.id === 'lumen-2-pro').capability_tags).toContain('Text to Image');
  });

  it("keeps the same scope with or without expand, and only the key's allowed models", async () => {
    const c = await h.newCustomer({ balance: 1, models: ['lumen-2-flex'] });
    const ids = async (q: string) => ((await api().get(`/v1/models${q}`).set(auth(c.key))).body.data as Array<{ id: string }>).map((m) => m.id).sort();
    expect(await ids('')).toEqual(['lumen-2-flex']);
    expect(await ids('?expand=parameters')).toEqual(['lumen-2-flex']);
    expect(await ids('?expand=bogus')).toEqual(['lumen-2-flex']);
    expect((await api().get('/v1/models/lumen-2-pro/schema').set(auth(c.key))).status).toBe(404);
  });

  it('serves expand=parameters gzip-compressed when the client accepts gzip', async () => {
    // superagent inflates the body itself; the header proves it travelled gzip-compressed
    const res = await api().get('/v1/models?expand=parameters').set(auth()).set('Accept-Encoding', 'gzip');
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe('gzip');
    const doc = res.body as { data: Array<{ id: string; parameters: { input_schema: { $schema: string } } }> };
    const pro = doc.data.find((m) => m.id === 'lumen-2-pro')!;
    expect(pro.parameters).toMatchObject({ operation: 'image_generation', method: 'POST', endpoint: '/v1/images/generations' });
    expect(pro.parameters.input_schema.$schema).toContain('2020-12');
  });

  it('serves one model schema with idempotency and response-contract blocks, by path and by query', async () => {
    const byPath = await api().get('/v1/models/lumen-2-pro/schema').set(auth());
    expect(byPath.status).toBe(200);
    expect(byPath.body).toMatchObject({
      id: 'lumen-2-pro',
      parameters: expect.any(Object),
      idempotency: expect.any(Object),
      response_contract: expect.any(Object),
    });
    const byQuery = await api().get('/v1/model-schema').query({ model: 'lumen-2-pro' }).set(auth());
    expect(byQuery.body).toEqual(byPath.body);
  });

  it('answers an unknown model schema with 404 and a missing model query with 400', async () => {
    const unknown = await api().get('/v1/model-schema').query({ model: 'vendor/unknown-model' }).set(auth());
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 404, type: 'not_found_error' });
    const missing = await api().get('/v1/model-schema').set(auth());
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toContain('`model`');
  });
});

describe('submission guards', () => {
  it('replays the first acknowledgement for a repeated Idempotency-Key: one task, one charge', async () => {
    const c = await h.newCustomer({ balance: 1 });
    const send = () => api().post(IMAGES).set(auth(c.key)).set('Idempotency-Key', 'order-42').send(lumen);
    const first = await send();
    const second = await send();
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    const [{ n }] = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [c.accountId]);
    expect(n).toBe(1);
  });

  it('limits requests per second per key with 429 rate_limit_error and Retry-After', async () => {
    const c = await h.newCustomer({ balance: 1 });
    await h.db.dataSource.query(`UPDATE api_keys SET rps_limit = 1 WHERE id = $1`, [c.keyId]);
    const results = await Promise.all(Array.from({ length: 5 }, () => api().post(IMAGES).set(auth(c.key)).send({ model: 'lumen-2-pro' })));
    const limited = results.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited[0].body.error).toMatchObject({ code: 429, type: 'rate_limit_error' });
    expect(Number(limited[0].headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });
});

describe('management API mount', () => {
  it('serves /api/* in the {success, message, data} envelope with its own auth', async () => {
    const balance = await api().get('/api/balance').set(auth());
    expect(balance.status).toBe(200);
    expect(balance.body).toMatchObject({ success: true, data: expect.anything() });
    const noAdmin = await api().get('/api/prices').set(auth());
    expect(noAdmin.status).toBe(401);
    expect(noAdmin.body).toMatchObject({ success: false, data: null });
    const admin = await api().get('/api/prices').set('Authorization', `Bearer ${h.config.adminToken}`);
    expect(admin.status).toBe(200);
  });

  it('revoking a key through /api applies at once on this replica', async () => {
    const c = await h.newCustomer({ balance: 1 });
    expect((await api().get('/v1/models').set(auth(c.key))).status).toBe(200);
    const del = await api().delete(`/api/keys/${c.keyId}`).set('Authorization', `Bearer ${h.config.adminToken}`);
    expect(del.status).toBe(200);
    expect((await api().get('/v1/models').set(auth(c.key))).status).toBe(401);
  });
});

describe('health', () => {
  it('answers /healthz and /readyz without auth when Postgres and Redis answer', async () => {
    expect((await api().get('/healthz')).body).toEqual({ status: 'ok' });
    const ready = await api().get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready', checks: { postgres: 'ok', redis: 'ok', redis_memory: 'ok' } });
  });
});
