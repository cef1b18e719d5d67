import { taskViewKey } from '@gmg/queue';
import request from 'supertest';
import { AccountRepository } from '@gmg/db';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness();
});
afterAll(async () => {
  await h?.close();
});

const IMAGES = '/v1/images/generations';
const VIDEOS = '/v1/videos/generations';
const body = (extra: Record<string, unknown> = {}) => ({ model: 'lumen-2-pro', prompt: 'a red fox in snow', ...extra });

/**
 * What the server should hold for body(): lumen-2-pro at its default 2MP tier, `lumen-2-pro@2MP` = 0.05 in
 * infra/prices.json (minor units: 1 unit = 1,000,000) — a literal, never the quote of the code under test.
 */
const PRICE_2MP = 50_000n;

const count = async (sql: string, params: unknown[]) => Number(((await h.db.dataSource.query(sql, params)) as Array<{ n: number }>)[0].n);
const jobCount = async () => {
  const c = await h.queue('image').getJobCounts('waiting', 'delayed', 'active', 'prioritized', 'completed', 'failed');
  return Object.values(c).reduce((a, b) => a + b, 0);
};

describe('POST /v1/images/generations', () => {
  it('accepts a valid lumen-2-pro request: ack shape A, pending task row, hold, ledger entry, job with jobId = task id, task view', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const res = await request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send(body());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ code: 200, data: [{ status: 'submitted', task_id: expect.stringMatching(/^task_[0-9A-Za-z]{24}$/) }] });
    const id = res.body.data[0].task_id as string;
    const price = PRICE_2MP;

    const [row] = await h.db.dataSource.query(`SELECT * FROM tasks WHERE id = $1`, [id]);
    expect(row).toMatchObject({
      account_id: c.accountId,
      api_key_id: c.keyId,
      model: 'lumen-2-pro',
      pool: 'image',
      status: 'pending',
      price: price.toString(),
    });
    expect(row.request.upstreamBody).toMatchObject({ model: 'lumen-2-pro', prompt: 'a red fox in snow', resolution: '2MP' });
    expect(row.price_snapshot).toMatchObject({ total: price.toString(), ratio: 1 });
    const deadlineIn = new Date(row.deadline_at).getTime() - new Date(row.created_at).getTime();
    expect(Math.abs(deadlineIn - 1800_000)).toBeLessThan(5000);

    const account = await new AccountRepository(h.db.dataSource).get(c.accountId);
    expect(account!.held).toBe(price);
    expect(account!.available).toBe(10_000_000n - price);
    const ledger = await h.db.dataSource.query(`SELECT kind, amount FROM ledger_entries WHERE task_id = $1`, [id]);
    expect(ledger).toEqual([{ kind: 'hold', amount: price.toString() }]);

    const job = await h.queue('image').getJob(id);
    expect(job?.id).toBe(id);
    expect(job?.data).toMatchObject({ taskId: id, submitAttempts: 0 });

    const view = JSON.parse((await h.redis.get(taskViewKey(h.prefix, id)))!);
    expect(view).toMatchObject({ accountId: c.accountId, pool: 'image', task: { id, status: 'pending', progress: 0 } });
  });

  it('accepts lumen-2-flex with steps (flex only) and a reference on the gateway upload prefix', async () => {
    const c = await h.newCustomer({ balance: 1 });
    const b = { model: 'lumen-2-flex', prompt: 'x', steps: 20, image_urls: ['http://127.0.0.1:8080/v1/uploads/abc.png'] };
    const res = await request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send(b);
    expect(res.status).toBe(200);
    expect(res.body.data[0].status).toBe('submitted');
  });

  it.each([
    ['steps sent to lumen-2-pro (flex only)', { steps: 20 }, 'steps'],
    ['guidance sent to lumen-2-pro (flex only)', { guidance: 3 }, 'guidance'],
    ['resolution not a tier or alias', { resolution: '5MP' }, 'resolution'],
    ['size not a ratio or pixel string', { size: '7:5' }, 'size'],
    ['pixel-string size above 4 MP', { size: '3000x3000' }, 'size'],
    ['width without height', { width: 1024 }, 'height'],
    ['width*height above 4 MP', { width: 4096, height: 2048 }, 'width'],
    ['width below 64', { width: 32, height: 512 }, 'width'],
    ['n other than 1', { n: 2 }, 'n'],
    ['safety_tolerance above 5', { safety_tolerance: 6 }, 'safety_tolerance'],
    ['output_format not jpeg/png/webp', { output_format: 'gif' }, 'output_format'],
    ['9 reference images', { image_urls: Array.from({ length: 9 }, (_, i) => `https://example.com/${i}.png`) }, 'image_urls'],
    ['a reference on a loopback address', { image_urls: ['http://127.0.0.1:9/a.png'] }, 'image_urls'],
    ['prompt missing', { prompt: undefined }, 'prompt'],
  ])('rejects lumen-2-pro with %s with 400 naming the field, no task, no job', async (_what, extra, field) => {
    const c = await h.newCustomer({ balance: 10 });
    const jobsBefore = await jobCount();
    const res = await request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send(body(extra));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { code: 400, type: 'invalid_request_error', message: expect.stringContaining(`\`${field}`) } });
    expect(await count(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [c.accountId])).toBe(0);
    expect(await jobCount()).toBe(jobsBefore);
    const account = await new AccountRepository(h.db.dataSource).get(c.accountId);
    expect(account!.available).toBe(10_000_000n);
  });

  it('rejects an unknown model with 400 naming `model`', async () => {
    const c = await h.newCustomer({ balance: 1 });
    const res = await request(h.baseUrl)
      .post(IMAGES)
      .set('Authorization', `Bearer ${c.key}`)
      .send(body({ model: 'no-such-model' }));
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 400, type: 'invalid_request_error', message: expect.stringContaining('`model`') });
  });

  it('rejects a missing model and a non-object body with 400', async () => {
    const c = await h.newCustomer({ balance: 1 });
    const a = await request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send({ prompt: 'x' });
    expect(a.status).toBe(400);
    expect(a.body.error.message).toContain('`model`');
    const b = await request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send([1, 2]);
    expect(b.status).toBe(400);
    expect(b.body.error.message).toMatch(/JSON object/);
  });

  it('rejects an image model on the video endpoint and a chat model on the image endpoint with 400', async () => {
    const c = await h.newCustomer({ balance: 1 });
    const v = await request(h.baseUrl).post(VIDEOS).set('Authorization', `Bearer ${c.key}`).send(body());
    expect(v.status).toBe(400);
    expect(v.body.error.message).toContain('/v1/images/generations');
    const chat = await request(h.baseUrl)
      .post(IMAGES)
      .set('Authorization', `Bearer ${c.key}`)
      .send(body({ model: 'lumen-chat-1' }));
    expect(chat.status).toBe(400);
    expect(chat.body.error.type).toBe('invalid_request_error');
  });

  it('answers 403 permission_error when the key restriction list does not include the model', async () => {
    const c = await h.newCustomer({ balance: 1, models: ['lumen-2-flex'] });
    const res = await request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send(body());
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: { code: 403, type: 'permission_error', message: expect.stringContaining('lumen-2-pro') } });
  });

  it('answers 403 when the group model list excludes the model even though the key has no list', async () => {
    await h.db.dataSource.query(`INSERT INTO groups (name, models) VALUES ('flex-only', ARRAY['lumen-2-flex'])`);
    const c = await h.newCustomer({ balance: 1, groupName: 'flex-only' });
    const res = await request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send(body());
    expect(res.status).toBe(403);
    const ok = await request(h.baseUrl)
      .post(IMAGES)
      .set('Authorization', `Bearer ${c.key}`)
      .send(body({ model: 'lumen-2-flex' }));
    expect(ok.status).toBe(200);
  });

  it('answers 402 payment_required with no task row, no job and no ledger entry when the balance is short', async () => {
    const c = await h.newCustomer({ balance: 0 });
    const jobsBefore = await jobCount();
    const res = await request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send(body());
    expect(res.status).toBe(402);
    expect(res.body).toEqual({ error: { code: 402, type: 'payment_required', message: expect.any(String) } });
    expect(await count(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [c.accountId])).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = $1`, [c.accountId])).toBe(0);
    expect(await jobCount()).toBe(jobsBefore);
  });

  it('applies the group price ratio to the hold', async () => {
    await h.db.dataSource.query(`INSERT INTO groups (name, price_ratio) VALUES ('half', 0.5)`);
    const c = await h.newCustomer({ balance: 1, groupName: 'half' });
    const res = await request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send(body());
    expect(res.status).toBe(200);
    const [row] = await h.db.dataSource.query(`SELECT price FROM tasks WHERE id = $1`, [res.body.data[0].task_id]);
    expect(BigInt(row.price)).toBe(PRICE_2MP / 2n);
  });

  it('answers 503 service_unavailable (model not priced) and takes no money when no price key exists', async () => {
    await h.db.dataSource.query(`DELETE FROM prices WHERE key = 'lumen-2-max' OR key LIKE 'lumen-2-max@%'`);
    const c = await h.newCustomer({ balance: 1 });
    const res = await request(h.baseUrl)
      .post(IMAGES)
      .set('Authorization', `Bearer ${c.key}`)
      .send(body({ model: 'lumen-2-max' }));
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: 503, type: 'service_unavailable', message: expect.stringContaining('not priced') });
    expect(await count(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [c.accountId])).toBe(0);
  });

  it('accepts exactly 10 of 200 concurrent submits against a balance covering 10; the rest get 402 and available never goes negative', async () => {
    const price = PRICE_2MP;
    const accounts = new AccountRepository(h.db.dataSource);
    // a group without rate limits: this tests the balance race, not the default fair-use limits
    const c = await h.newCustomer({ balance: 0, groupName: 'burst-unlimited' });
    await accounts.topup(c.accountId, price * 10n);
    const jobsBefore = await jobCount();
    const results = await Promise.all(Array.from({ length: 200 }, () => request(h.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send(body())));
    const ok = results.filter((r) => r.status === 200);
    const paymentRequired = results.filter((r) => r.status === 402);
    expect(ok).toHaveLength(10);
    expect(paymentRequired).toHaveLength(190);
    for (const r of paymentRequired) expect(r.body.error).toMatchObject({ code: 402, type: 'payment_required' });
    const account = await accounts.get(c.accountId);
    expect(account!.available).toBe(0n);
    expect(account!.held).toBe(price * 10n);
    expect(await count(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [c.accountId])).toBe(10);
    // one hold per accepted task; under contention the edge may also have taken a task lease (docs/reliability.md, "Hot
    // accounts"), whose own hold entry (task_id = the lease's id) is not a task's
    expect(
      await count(
        `SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = $1 AND kind = 'hold' AND task_id IN (SELECT id FROM tasks WHERE account_id = $1)`,
        [c.accountId],
      ),
    ).toBe(10);
    expect(
      await count(
        `SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = $1 AND kind = 'hold' AND task_id NOT IN (SELECT id FROM tasks WHERE account_id = $1) AND task_id NOT IN (SELECT id FROM credit_leases)`,
        [c.accountId],
      ),
    ).toBe(0);
    expect(await jobCount()).toBe(jobsBefore + 10);
    const ids = new Set(ok.map((r) => r.body.data[0].task_id as string));
    expect(ids.size).toBe(10);
  }, 60_000);
});

describe('submit when Redis fails after the commit', () => {
  let broken: EdgeHarness;
  beforeAll(async () => {
    const down = async (): Promise<never> => {
      throw new Error('redis down');
    };
    broken = await startEdgeHarness({ deps: { producers: { enqueueTask: down, requestSettlement: down, removeTaskJob: down } } });
  });
  afterAll(async () => {
    await broken?.close();
  });

  it('still answers shape A and keeps the pending task row for the reconciler', async () => {
    const c = await broken.newCustomer({ balance: 1 });
    const res = await request(broken.baseUrl).post(IMAGES).set('Authorization', `Bearer ${c.key}`).send(body());
    expect(res.status).toBe(200);
    const [row] = await broken.db.dataSource.query(`SELECT status FROM tasks WHERE id = $1`, [res.body.data[0].task_id]);
    expect(row.status).toBe('pending');
  });
});
