import request from 'supertest';
import { ApiKeyRepository } from '@gmg/db';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

const IMAGES = '/v1/images/generations';
/** Refused by validation (no prompt), after the rate limits: costs nothing and never reaches a queue. */
const invalid = { model: 'lumen-2-pro' };
const ADMIN = { Authorization: 'Bearer test-admin-token-0123456789abcdef' };

const statuses = (rs: request.Response[]) => {
  const out: Record<number, number> = {};
  for (const r of rs) out[r.status] = (out[r.status] ?? 0) + 1;
  return out;
};

describe('fair use by default (docs/rate-limits.md)', () => {
  let h: EdgeHarness;
  beforeAll(async () => {
    h = await startEdgeHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  const burst = (key: string, n: number) =>
    Promise.all(Array.from({ length: n }, () => request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${key}`).send(invalid)));

  it('ships the default group with 20 requests per second and 50 tasks in flight', async () => {
    const res = await request(h.baseUrl).get('/api/groups').set(ADMIN).expect(200);
    expect(res.body.data.find((g: { name: string }) => g.name === 'default')).toMatchObject({ rps_limit: 20, inflight_limit: 50 });
  });

  it('applies the default to a new key: 20 of 25 concurrent submits pass to validation, 5 get 429 with Retry-After', async () => {
    const c = await h.newCustomer({ balance: 1 });
    const rs = await burst(c.key, 25);
    expect(statuses(rs)).toEqual({ 400: 20, 429: 5 });
    const limited = rs.find((r) => r.status === 429)!;
    expect(limited.body).toEqual({ error: { code: 429, type: 'rate_limit_error', message: expect.stringContaining('20 requests per second') } });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited.headers['x-ratelimit-limit']).toBe('20');
  });

  it('lets a group without limits, and a key with its own limit, override the default', async () => {
    const free = await h.newCustomer({ balance: 1, groupName: 'partners-unlimited' });
    expect(statuses(await burst(free.key, 25))).toEqual({ 400: 25 });
    const own = await h.newCustomer({ balance: 1 });
    const { secret } = await new ApiKeyRepository(h.db.dataSource).create({ accountId: own.accountId, rpsLimit: 100 });
    expect(statuses(await burst(secret, 25))).toEqual({ 400: 25 });
  });
});

describe('failed-authentication throttle over HTTP', () => {
  let h: EdgeHarness;
  afterEach(async () => {
    await h?.close();
  });

  const bad = (i: number, forwardedFor?: string) => {
    const r = request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer sk-wrong-${i}`);
    return (forwardedFor ? r.set('X-Forwarded-For', forwardedFor) : r).send(invalid);
  };

  it('behind one trusted proxy: counts the forwarded client address, 429 in the spec shape before the lookup, /api too', async () => {
    h = await startEdgeHarness({ env: { FAILED_AUTH_LIMIT: '2', FAILED_AUTH_BLOCK_SECONDS: '90', TRUST_PROXY: '1' } });
    const good = await h.newCustomer({ balance: 1 });
    const ok = () => request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${good.key}`).set('X-Forwarded-For', '198.51.100.1').send(invalid);
    expect((await ok()).status).toBe(400); // the valid key is now cached
    for (let i = 0; i < 3; i++) expect((await bad(i, '198.51.100.1')).status).toBe(401);
    const refused = await bad(4, '198.51.100.1');
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: { code: 429, type: 'rate_limit_error', message: expect.stringContaining('failed authentication') } });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(60);
    const mgmt = await request(h.baseUrl).get('/api/balance').set('Authorization', 'Bearer sk-wrong-9').set('X-Forwarded-For', '198.51.100.1');
    expect(mgmt.status).toBe(429);
    expect(mgmt.body).toMatchObject({ success: false, data: null });
    expect(Number(mgmt.headers['retry-after'])).toBeGreaterThan(60);
    // another client address, and the blocked address's cached valid key, are unaffected
    expect((await bad(5, '198.51.100.2')).status).toBe(401);
    expect((await ok()).status).toBe(400);
  });

  it('without TRUST_PROXY ignores X-Forwarded-For: a client cannot escape by writing a new address each time', async () => {
    h = await startEdgeHarness({ env: { FAILED_AUTH_LIMIT: '2' } });
    const rs = [];
    for (let i = 0; i < 5; i++) rs.push((await bad(i, `203.0.113.${i + 1}`)).status);
    expect(rs).toEqual([401, 401, 401, 429, 429]);
  });
});
