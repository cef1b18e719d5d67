import request from 'supertest';
import { WebhookRepository } from '@gmg/db';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/** callback_url at submit, and the account's webhook secret and delivery log in the management API. */
let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness();
});
afterAll(async () => {
  await h?.close();
});

const lumen = { model: 'lumen-2-pro', prompt: 'a lighthouse' };
const as = (key: string) => ({ Authorization: `Bearer ${key}` });
const callbackOf = async (taskId: string): Promise<string | null> =>
  (await h.db.dataSource.query(`SELECT callback_url FROM tasks WHERE id = $1`, [taskId]))[0].callback_url;
const taskCount = async (accountId: string): Promise<number> =>
  Number((await h.db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [accountId]))[0].n);

describe('callback_url at submit (local mode off)', () => {
  it('stores an https callback on the task, keeps it out of the upstream body and the poll', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const res = await request(h.baseUrl)
      .post('/v1/images/generations')
      .set(as(c.key))
      .send({ ...lumen, callback_url: 'https://hooks.example.com/gmg?t=1' });
    expect(res.status).toBe(200);
    const id = res.body.data[0].task_id as string;
    expect(await callbackOf(id)).toBe('https://hooks.example.com/gmg?t=1');
    const row = await h.db.dataSource.query(`SELECT request FROM tasks WHERE id = $1`, [id]);
    expect(JSON.stringify(row[0].request)).not.toContain('hooks.example.com');
    const poll = await request(h.baseUrl).get(`/v1/tasks/${id}`).set(as(c.key));
    expect(JSON.stringify(poll.body)).not.toContain('callback');
  });

  it('stores it for an art suite submission too', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const res = await request(h.baseUrl)
      .post('/v1/artgen/generations/imagine')
      .set(as(c.key))
      .send({ prompt: 'a lighthouse', callback_url: 'https://hooks.example.com/art' });
    expect(res.status).toBe(200);
    expect(await callbackOf(res.body.data.task_id)).toBe('https://hooks.example.com/art');
  });

  it('stores it for an avatar batch too, outside the upstream body', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const res = await request(h.baseUrl)
      .post('/v1/motion2/private-avatar')
      .set(as(c.key))
      .send({
        asset_type: 'Image',
        project_name: 'launch',
        assets: [{ url: 'https://cdn.example.com/a/0.png', name: 'a0' }],
        callback_url: 'https://hooks.example.com/avatar',
      });
    expect(res.status).toBe(200);
    expect(await callbackOf(res.body.data.id)).toBe('https://hooks.example.com/avatar');
    const row = await h.db.dataSource.query(`SELECT request FROM tasks WHERE id = $1`, [res.body.data.id]);
    expect(row[0].request.upstreamBody).not.toHaveProperty('callback_url');
  });

  it.each([
    ['http outside local mode', 'http://hooks.example.com/x', 'must use https'],
    ['a loopback address', 'https://127.0.0.1/x', 'callback_url'],
    ['a private name', 'https://metadata.google.internal/x', 'callback_url'],
    ['not a URL', 'hooks', 'not a valid absolute URL'],
    ['not a string', 42, 'must be a string'],
  ])('refuses %s with 400 naming callback_url; no task, no money', async (_what, url, message) => {
    const c = await h.newCustomer({ balance: 10 });
    const res = await request(h.baseUrl)
      .post('/v1/images/generations')
      .set(as(c.key))
      .send({ ...lumen, callback_url: url });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 400, type: 'invalid_request_error' });
    expect(res.body.error.message).toContain('`callback_url`');
    expect(res.body.error.message).toContain(message);
    expect(await taskCount(c.accountId)).toBe(0);
  });
});

describe('callback_url in local mode (WEBHOOK_ALLOW_INSECURE)', () => {
  let local: EdgeHarness;
  beforeAll(async () => {
    local = await startEdgeHarness({ env: { WEBHOOK_ALLOW_INSECURE: '1' } });
  });
  afterAll(async () => {
    await local?.close();
  });

  it('accepts an http loopback receiver', async () => {
    const c = await local.newCustomer({ balance: 10 });
    const res = await request(local.baseUrl)
      .post('/v1/images/generations')
      .set(as(c.key))
      .send({ ...lumen, callback_url: 'http://127.0.0.1:9/hook' });
    expect(res.status).toBe(200);
  });
});

describe('management API: /api/webhooks/*', () => {
  it('reads (creating) and rotates the account secret', async () => {
    const c = await h.newCustomer({ balance: 1 });
    const first = await request(h.baseUrl).get('/api/webhooks/secret').set(as(c.key));
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ success: true, message: 'ok', data: { secret: expect.stringMatching(/^whsec_/), rotated_at: expect.any(Number) } });
    const again = await request(h.baseUrl).get('/api/webhooks/secret').set(as(c.key));
    expect(again.body.data.secret).toBe(first.body.data.secret);
    const rotated = await request(h.baseUrl).post('/api/webhooks/secret/rotate').set(as(c.key));
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.secret).not.toBe(first.body.data.secret);
    expect((await request(h.baseUrl).get('/api/webhooks/secret').set(as(c.key))).body.data.secret).toBe(rotated.body.data.secret);
    expect((await request(h.baseUrl).get('/api/webhooks/secret')).status).toBe(401);
  });

  it("lists the account's own delivery attempts, newest first, paged", async () => {
    const c = await h.newCustomer({ balance: 1 });
    const other = await h.newCustomer({ balance: 1 });
    const repo = new WebhookRepository(h.db.dataSource);
    const attempt = (accountId: string, n: number) =>
      repo.recordAttempt({
        accountId,
        taskId: 'task_abc',
        event: 'completed',
        deliveryId: 'whd_x',
        attempt: n,
        url: 'https://hooks.example.com/x',
        statusCode: n < 3 ? 500 : 200,
        error: null,
        succeeded: n === 3,
        durationMs: 12,
      });
    for (const n of [1, 2, 3]) await attempt(c.accountId, n);
    await attempt(other.accountId, 1);

    const p1 = await request(h.baseUrl).get('/api/webhooks/deliveries?limit=2').set(as(c.key));
    expect(p1.status).toBe(200);
    expect(p1.body.data.items.map((d: { attempt: number }) => d.attempt)).toEqual([3, 2]);
    expect(p1.body.data.items[0]).toMatchObject({ task_id: 'task_abc', event: 'completed', status_code: 200, succeeded: true, delivery_id: 'whd_x' });
    const p2 = await request(h.baseUrl).get(`/api/webhooks/deliveries?limit=2&cursor=${p1.body.data.next_cursor}`).set(as(c.key));
    expect(p2.body.data.items.map((d: { attempt: number }) => d.attempt)).toEqual([1]);
    expect(p2.body.data.next_cursor).toBeNull();
    const bad = await request(h.baseUrl).get('/api/webhooks/deliveries?limit=0').set(as(c.key));
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false, message: expect.stringContaining('limit') });
  });
});
