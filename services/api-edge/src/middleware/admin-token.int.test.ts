import request from 'supertest';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/**
 * Guesses of the admin token are throttled per client address like failed API keys (docs/rate-limits.md), on every
 * admin surface: the management API's admin routes, /metrics and the queue dashboard. Behind one trusted proxy, so
 * X-Forwarded-For gives each test client its own address.
 */
describe('admin token: failed attempts throttled per client address', () => {
  let h: EdgeHarness;
  const ADMIN = 'test-admin-token-0123456789abcdef';
  beforeAll(async () => {
    h = await startEdgeHarness({ env: { TRUST_PROXY: '1', FAILED_AUTH_LIMIT: '3', FAILED_AUTH_WINDOW_SECONDS: '60', FAILED_AUTH_BLOCK_SECONDS: '120' } });
  });
  afterAll(async () => {
    await h?.close();
  });

  const as = (address: string, token: string) => ({
    prices: () => request(h.baseUrl).get('/api/prices').set('X-Forwarded-For', address).set('Authorization', `Bearer ${token}`),
    metrics: () => request(h.baseUrl).get('/metrics').set('X-Forwarded-For', address).set('Authorization', `Bearer ${token}`),
    queues: () => request(h.baseUrl).get('/admin/queues/api/queues').set('X-Forwarded-For', address).set('Authorization', `Bearer ${token}`),
  });

  it('answers 401 to wrong tokens within the budget, then 429 with Retry-After on every admin surface, the right token included', async () => {
    const guesser = as('198.51.100.20', 'not-the-admin-token');
    // the budget is 3 failures: the 4th goes over it; each is a plain 401 on whichever admin surface
    expect((await guesser.prices()).status).toBe(401);
    expect((await guesser.metrics()).status).toBe(401);
    expect((await guesser.queues()).status).toBe(401);
    expect((await guesser.prices()).status).toBe(401);

    const right = as('198.51.100.20', ADMIN);
    for (const call of [right.prices, right.metrics, right.queues]) {
      const res = await call();
      expect(res.status).toBe(429);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(60);
    }
  });

  it('leaves other addresses alone: the right token works, a wrong one is a 401', async () => {
    const other = as('198.51.100.21', ADMIN);
    expect((await other.prices()).status).toBe(200);
    expect((await other.metrics()).status).toBe(200);
    expect((await other.queues()).status).toBe(200);
    expect((await as('198.51.100.22', 'wrong').metrics()).status).toBe(401);
  });
});
