import request from 'supertest';
import { settle } from '@gmg/db';
import { checkLedger, waitFor } from '@gmg/testing';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/**
 * API keys with a spending cap, an end date and rotation (issue 37 item 5), through two edges of one fleet (one
 * database, one Redis prefix, each its own key cache, hold batcher and lease book), over real HTTP.
 */
let a: EdgeHarness;
let b: EdgeHarness;
beforeAll(async () => {
  a = await startEdgeHarness();
  b = await startEdgeHarness({ beside: a });
}, 60_000);
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const ADMIN = 'test-admin-token-0123456789abcdef';
const IMAGES = '/v1/images/generations';
const body = { model: 'lumen-2-pro', prompt: 'a red fox in snow' };
/** lumen-2-pro at its default 2MP tier: 0.05 in infra/prices.json (minor units) — a literal, never the code's quote. */
const PRICE = 50_000n;

const admin = (edge: EdgeHarness, method: 'get' | 'post' | 'patch', path: string) =>
  request(edge.baseUrl)[method](path).set('Authorization', `Bearer ${ADMIN}`);
const submit = (edge: EdgeHarness, secret: string) => request(edge.baseUrl).post(IMAGES).set('Authorization', `Bearer ${secret}`).send(body);
const models = (edge: EdgeHarness, secret: string) => request(edge.baseUrl).get('/v1/models').set('Authorization', `Bearer ${secret}`);

/** A customer without rate limits (this tests the cap, not fair use) and a key made through POST /api/keys with `extra`. */
async function keyWith(
  extra: Record<string, unknown>,
  balance = 100,
): Promise<{ accountId: string; id: string; secret: string; view: Record<string, unknown> }> {
  const c = await a.newCustomer({ balance, groupName: 'caps-unlimited' });
  const made = await admin(a, 'post', '/api/keys').send({ account_id: c.accountId, name: 'capped', ...extra });
  expect(made.status).toBe(201);
  return { accountId: c.accountId, id: made.body.data.id, secret: made.body.data.key, view: made.body.data };
}

const spent = async (keyId: string): Promise<bigint> => {
  const rows = (await a.db.dataSource.query(`SELECT COALESCE(sum(spent), 0)::text AS s FROM api_key_spend WHERE api_key_id = $1`, [keyId])) as Array<{
    s: string;
  }>;
  return BigInt(rows[0]!.s);
};

describe('a key capped at 10 tasks’ worth', () => {
  it('accepts exactly 10 of 200 concurrent submits spread over two edges; the rest get 402 naming the cap; the ledger checks', async () => {
    // a balance of 100 units covers 2000 tasks: only the cap (0.5 = 10 × 0.05) can stop them
    const k = await keyWith({ max_spend: 0.5 });
    expect(k.view).toMatchObject({ max_spend: 0.5, spend_window: null, expires_at: null });
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => submit(i % 2 ? b : a, k.secret)));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect({ ok: ok.length, refused: refused.length }).toEqual({ ok: 10, refused: 190 });
    for (const r of refused) {
      expect(r.body).toEqual({ error: { code: 402, type: 'payment_required', message: expect.stringContaining('max_spend') } });
      expect(r.body.error.message).toContain('at most 0.5 over its life');
    }
    const [acc] = (await a.db.dataSource.query(`SELECT held::text, available::text FROM accounts WHERE id = $1`, [k.accountId])) as Array<{
      held: string;
      available: string;
    }>;
    expect(BigInt(acc!.held)).toBe(PRICE * 10n);
    expect(BigInt(acc!.available)).toBe(100_000_000n - PRICE * 10n);
    expect(await spent(k.id)).toBe(PRICE * 10n);
    const tasks = (await a.db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE api_key_id = $1`, [k.id])) as Array<{ n: number }>;
    expect(tasks[0]!.n).toBe(10);
    expect(await checkLedger(a.db.dataSource, { accounts: [k.accountId] })).toEqual([]);

    // a cancelled (failed) task gives its price back to the key's spend at settlement, once: one more task fits, not two
    const first = ok[0]!.body.data[0].task_id as string;
    expect((await request(b.baseUrl).post(`/v1/tasks/${first}/cancel`).set('Authorization', `Bearer ${k.secret}`)).status).toBe(200);
    expect((await settle(a.db.dataSource, first)).outcome).toBe('released');
    expect((await settle(a.db.dataSource, first)).outcome).toBe('duplicate');
    expect(await spent(k.id)).toBe(PRICE * 9n);
    const again = await Promise.all([submit(a, k.secret), submit(b, k.secret), submit(a, k.secret)]);
    expect(again.map((r) => r.status).sort()).toEqual([200, 402, 402]);
    expect(await spent(k.id)).toBe(PRICE * 10n);
    expect(await checkLedger(a.db.dataSource, { accounts: [k.accountId] })).toEqual([]);
  }, 120_000);

  it('counts a daily cap in the current UTC day, and refuses a cap with a window but no amount (400 naming the field)', async () => {
    const k = await keyWith({ max_spend: 0.1, spend_window: 'day' });
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => submit(i % 2 ? b : a, k.secret)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(2);
    expect(results.find((r) => r.status === 402)?.body.error.message).toContain('at most 0.1 per UTC day');
    const today = new Date().toISOString().slice(0, 10);
    const rows = (await a.db.dataSource.query(`SELECT period, spent::text FROM api_key_spend WHERE api_key_id = $1`, [k.id])) as Array<{
      period: string;
      spent: string;
    }>;
    expect(rows).toEqual([{ period: today, spent: (PRICE * 2n).toString() }]);
    const c = await a.newCustomer({ balance: 1 });
    const bad = await admin(a, 'post', '/api/keys').send({ account_id: c.accountId, spend_window: 'day' });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain('spend_window');
    const badWindow = await admin(a, 'post', '/api/keys').send({ account_id: c.accountId, max_spend: 1, spend_window: 'week' });
    expect(badWindow.status).toBe(400);
    expect(badWindow.body.message).toContain('spend_window');
  }, 60_000);
});

describe('a key’s cap and end date, shown and changed through the management API', () => {
  it('GET shows max_spend, spend_window, the window’s spent and expires_at; PATCH changes them and the next hold checks the new cap', async () => {
    // 0.1 = 2 tasks; edge b serves (and caches) the key first
    const k = await keyWith({ max_spend: 0.1 });
    expect(k.view).toMatchObject({ max_spend: 0.1, spend_window: null, spent: 0, expires_at: null });
    expect((await submit(b, k.secret)).status).toBe(200);
    expect((await submit(a, k.secret)).status).toBe(200);
    expect((await submit(a, k.secret)).status).toBe(402);
    const one = await admin(a, 'get', `/api/keys/${k.id}`);
    expect(one.status).toBe(200);
    expect(one.body.data).toMatchObject({ id: k.id, max_spend: 0.1, spend_window: null, spent: 0.1, expires_at: null });
    const listed = await admin(a, 'get', `/api/keys?account_id=${k.accountId}`);
    expect(listed.body.data.find((v: { id: string }) => v.id === k.id)).toMatchObject({ max_spend: 0.1, spent: 0.1 });

    // a higher cap: one more task fits (on the edge that answered the PATCH: its cached key was dropped)
    const raised = await admin(a, 'patch', `/api/keys/${k.id}`).send({ max_spend: 0.15 });
    expect(raised.status).toBe(200);
    expect(raised.body.data).toMatchObject({ max_spend: 0.15, spend_window: null, spent: 0.1 });
    expect((await submit(a, k.secret)).status).toBe(200);
    expect((await submit(a, k.secret)).status).toBe(402);
    expect(await spent(k.id)).toBe(PRICE * 3n);

    // a daily window counts from today's spend (nothing yet), the cap stays
    const daily = await admin(a, 'patch', `/api/keys/${k.id}`).send({ spend_window: 'day' });
    expect(daily.body.data).toMatchObject({ max_spend: 0.15, spend_window: 'day', spent: 0 });
    expect((await submit(a, k.secret)).status).toBe(200);
    expect((await admin(a, 'get', `/api/keys/${k.id}`)).body.data.spent).toBe(0.05);

    // no cap: no count; the other edge follows once its cached key expires (AUTH_CACHE_TTL_MS)
    const uncapped = await admin(a, 'patch', `/api/keys/${k.id}`).send({ max_spend: null });
    expect(uncapped.body.data).toMatchObject({ max_spend: null, spend_window: null, spent: null });
    await waitFor(async () => (await submit(b, k.secret)).status === 200, { timeoutMs: 10_000, intervalMs: 100, what: 'edge b without the cap' });

    const expiresAt = Math.floor(Date.now() / 1000) + 3600;
    expect((await admin(a, 'patch', `/api/keys/${k.id}`).send({ expires_at: expiresAt })).body.data.expires_at).toBe(expiresAt);
    expect((await admin(a, 'patch', `/api/keys/${k.id}`).send({ expires_at: null })).body.data.expires_at).toBeNull();
    expect(await checkLedger(a.db.dataSource, { accounts: [k.accountId] })).toEqual([]);
  }, 60_000);

  it('refuses a bad change with 400 naming the field, and an unknown key with 404', async () => {
    const k = await keyWith({});
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ max_spend: 0 }, 'max_spend'],
      [{ max_spend: 0.0000001 }, 'max_spend'],
      [{ max_spend: 'lots' }, 'max_spend'],
      [{ spend_window: 'week' }, 'spend_window'],
      // a window on a key without a cap
      [{ spend_window: 'day' }, 'spend_window'],
      [{ expires_at: Math.floor(Date.now() / 1000) - 10 }, 'expires_at'],
      [{ name: 'renamed' }, 'name'],
    ];
    for (const [patch, field] of cases) {
      const r = await admin(a, 'patch', `/api/keys/${k.id}`).send(patch);
      expect({ patch, status: r.status }).toEqual({ patch, status: 400 });
      expect(r.body.message).toContain(`'${field}'`);
    }
    expect((await admin(a, 'patch', `/api/keys/${k.id}`).send({})).status).toBe(400);
    expect((await admin(a, 'get', `/api/keys/${k.id}`)).body.data).toMatchObject({ max_spend: null, spend_window: null, spent: null, expires_at: null });
    expect((await admin(a, 'patch', '/api/keys/00000000-0000-4000-8000-00000000abcd').send({ max_spend: 1 })).status).toBe(404);
    expect((await admin(a, 'get', '/api/keys/not-a-uuid')).status).toBe(404);
  }, 60_000);
});

describe('a key with an end date', () => {
  it('works until expires_at, then answers 401 with its own message on both edges — a key cached before it expired too', async () => {
    const expiresAt = Math.ceil(Date.now() / 1000) + 2;
    const k = await keyWith({ expires_at: expiresAt });
    expect(k.view.expires_at).toBe(expiresAt);
    // both edges cache the key now (AUTH_CACHE_TTL_MS 2000: it is still cached when it expires)
    for (const edge of [a, b]) expect((await models(edge, k.secret)).status).toBe(200);
    for (const edge of [a, b]) {
      const refused = await waitFor(
        async () => {
          const sentAt = Date.now();
          const r = await models(edge, k.secret);
          if (r.status === 200) expect(sentAt).toBeLessThan(expiresAt * 1000);
          return r.status === 401 ? r : undefined;
        },
        { timeoutMs: 10_000, intervalMs: 50, what: 'the expired key refused' },
      );
      expect(Date.now()).toBeGreaterThanOrEqual(expiresAt * 1000);
      expect(refused.body.error).toMatchObject({ type: 'authentication_error', message: expect.stringContaining('expired') });
    }
    const past = await admin(a, 'post', '/api/keys').send({ account_id: k.accountId, expires_at: Math.floor(Date.now() / 1000) - 10 });
    expect(past.status).toBe(400);
    expect(past.body.message).toContain('expires_at');
  }, 60_000);
});

describe('POST /api/keys/{id}/rotate', () => {
  it('issues a new secret under the same id; the old one works through the overlap on both edges, then 401 saying it was rotated', async () => {
    const k = await keyWith({ max_spend: 1, spend_window: 'month', rps_limit: 1000 });
    const before = await submit(b, k.secret);
    expect(before.status).toBe(200);
    // edge b caches the old secret before the rotation (its own cache is not cleared by edge a's rotation)
    expect((await models(b, k.secret)).status).toBe(200);

    const rotated = await admin(a, 'post', `/api/keys/${k.id}/rotate`).send({ overlap_seconds: 3 });
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.data.key as string;
    expect(fresh).not.toBe(k.secret);
    const until = (rotated.body.data.previous_secret_valid_until as number) * 1000;
    expect(rotated.body.data).toMatchObject({ id: k.id, max_spend: 1, spend_window: 'month', rps_limit: 1000, status: 'active' });
    expect(until).toBeGreaterThan(Date.now());

    // the new secret works at once on both edges, and sees the task made with the old one (same key, same account)
    for (const edge of [a, b]) expect((await models(edge, fresh)).status).toBe(200);
    const taskId = before.body.data[0].task_id as string;
    expect((await request(a.baseUrl).get(`/v1/tasks/${taskId}`).set('Authorization', `Bearer ${fresh}`)).status).toBe(200);

    // traffic on the old secret through the overlap: no 401 before it ends, then 401 saying it was rotated
    let servedOld = 0;
    for (const edge of [a, b]) {
      const refused = await waitFor(
        async () => {
          const sentAt = Date.now();
          const r = await models(edge, k.secret);
          if (r.status === 200) {
            servedOld++;
            expect(sentAt).toBeLessThan(until);
          }
          return r.status === 401 ? r : undefined;
        },
        { timeoutMs: 15_000, intervalMs: 50, what: 'the rotated-out secret refused' },
      );
      expect(Date.now()).toBeGreaterThanOrEqual(until);
      expect(refused.body.error).toMatchObject({ type: 'authentication_error', message: expect.stringContaining('rotated') });
    }
    expect(servedOld).toBeGreaterThan(0);
    for (const edge of [a, b]) expect((await models(edge, k.secret)).status).toBe(401);

    // history, limits and cap unchanged: the same key row, its tasks, its spend carried on under the new secret
    expect((await submit(a, fresh)).status).toBe(200);
    expect(await spent(k.id)).toBe(PRICE * 2n);
    const listed = await admin(a, 'get', `/api/keys?account_id=${k.accountId}`);
    expect(listed.body.data.filter((v: { id: string }) => v.id === k.id)).toEqual([
      expect.objectContaining({ max_spend: 1, spend_window: 'month', rps_limit: 1000, rotated_at: expect.any(Number) }),
    ]);
    const tasks = (await a.db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE api_key_id = $1`, [k.id])) as Array<{ n: number }>;
    expect(tasks[0]!.n).toBe(2);
    expect((await admin(a, 'post', '/api/keys/00000000-0000-4000-8000-00000000abcd/rotate').send({})).status).toBe(404);
  }, 60_000);
});
