import request from 'supertest';
import { toMinor } from '@gmg/contracts';
import { AccountRepository, GroupRepository } from '@gmg/db';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/** Spec 2.4: a whitelisted name without catalog metadata (`category=unknown`) is still callable. */

let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness();
  // priced the way an operator does it: PUT /api/prices
  const put = await request(h.baseUrl)
    .put('/api/prices')
    .set('Authorization', `Bearer ${h.config.adminToken}`)
    .send([
      { key: 'my-custom-model', price: 0.03, description: 'custom image model' },
      { key: 'my-custom-video@video', price: 0.4, description: 'custom video model' },
    ]);
  expect(put.status).toBe(200);
});
afterAll(async () => {
  await h?.close();
});

const IMAGES = '/v1/images/generations';
const VIDEOS = '/v1/videos/generations';
const count = async (sql: string, params: unknown[]) => Number(((await h.db.dataSource.query(sql, params)) as Array<{ n: number }>)[0].n);
const tasksOf = (accountId: string) => count(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [accountId]);

describe('custom model names from a key whitelist', () => {
  it('accepts a whitelisted, priced name on the image endpoint: ack A, task row with the body as sent, hold, image job', async () => {
    const c = await h.newCustomer({ balance: 1, models: ['my-custom-model'] });
    const sent = { model: 'my-custom-model', prompt: 'a lighthouse', style: 'ink', image_urls: ['https://cdn.example.com/a.png'] };
    const res = await request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send(sent);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ code: 200, data: [{ status: 'submitted', task_id: expect.stringMatching(/^task_/) }] });
    const id = res.body.data[0].task_id as string;

    const [row] = await h.db.dataSource.query(`SELECT * FROM tasks WHERE id = $1`, [id]);
    const price = toMinor(0.03);
    expect(row).toMatchObject({ model: 'my-custom-model', requested_model: 'my-custom-model', pool: 'image', status: 'pending', price: price.toString() });
    expect(row.request.upstreamBody).toEqual(sent);
    expect(row.request.expected).toEqual({ kind: 'images', count: 1 });
    expect((await new AccountRepository(h.db.dataSource).get(c.accountId))!.held).toBe(price);
    expect(await h.db.dataSource.query(`SELECT kind, amount FROM ledger_entries WHERE task_id = $1`, [id])).toEqual([
      { kind: 'hold', amount: price.toString() },
    ]);
    expect((await h.queue('image').getJob(id))?.id).toBe(id);
  });

  it('accepts a whitelisted name on the video endpoint through the video pool, priced by its @video key', async () => {
    const c = await h.newCustomer({ balance: 1, models: ['my-custom-video'] });
    const res = await request(h.baseUrl).post(VIDEOS).set('Authorization', `Bearer ${c.key}`).send({ model: 'my-custom-video', prompt: 'waves', seconds: 8 });
    expect(res.status).toBe(200);
    const id = res.body.data[0].task_id as string;
    const [row] = await h.db.dataSource.query(`SELECT pool, price FROM tasks WHERE id = $1`, [id]);
    expect(row).toEqual({ pool: 'video', price: toMinor(0.4).toString() });
    expect((await h.queue('video').getJob(id))?.id).toBe(id);
  });

  it('answers 503 model not priced with no task and no hold for a whitelisted name without a price', async () => {
    const c = await h.newCustomer({ balance: 1, models: ['unpriced-custom-model'] });
    const res = await request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send({ model: 'unpriced-custom-model', prompt: 'x' });
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: 503, type: 'service_unavailable', message: expect.stringContaining('not priced') });
    expect(await tasksOf(c.accountId)).toBe(0);
    expect((await new AccountRepository(h.db.dataSource).get(c.accountId))!.held).toBe(0n);
  });

  it.each([
    ['a key without a model list', null],
    ['a key whose list does not name it', ['lumen-2-pro']],
    ['a key whose list names it in another case', ['My-Custom-Model']],
  ])('rejects the name with 400 unknown model for %s', async (_what, models) => {
    const c = await h.newCustomer({ balance: 1, models });
    const res = await request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send({ model: 'my-custom-model', prompt: 'x' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 400, type: 'invalid_request_error', message: expect.stringContaining("unknown model 'my-custom-model'") });
    expect(await tasksOf(c.accountId)).toBe(0);
  });

  it('rejects a whitelisted name without `prompt` with 400 naming prompt and no task', async () => {
    const c = await h.newCustomer({ balance: 1, models: ['my-custom-model'] });
    const res = await request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send({ model: 'my-custom-model', size: '1:1' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 400, type: 'invalid_request_error', message: expect.stringContaining('`prompt`') });
    expect(await tasksOf(c.accountId)).toBe(0);
  });

  it('rejects a whitelisted name with a private media URL with 400 naming the field', async () => {
    const c = await h.newCustomer({ balance: 1, models: ['my-custom-model'] });
    const res = await request(h.baseUrl)
      .post(IMAGES)
      .set('Authorization', `Bearer ${c.key}`)
      .send({ model: 'my-custom-model', prompt: 'x', image_urls: ['http://169.254.169.254/latest/meta-data'] });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('`image_urls.0`');
    expect(await tasksOf(c.accountId)).toBe(0);
  });

  it('answers 403 when the group list does not name the whitelisted name', async () => {
    await new GroupRepository(h.db.dataSource).upsert({ name: 'narrow-custom', priceRatio: 1, models: ['lumen-2-pro'], rpsLimit: null, inflightLimit: null });
    const c = await h.newCustomer({ balance: 1, models: ['my-custom-model'], groupName: 'narrow-custom' });
    const res = await request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send({ model: 'my-custom-model', prompt: 'x' });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 403, type: 'permission_error' });
    expect(await tasksOf(c.accountId)).toBe(0);
  });
});
