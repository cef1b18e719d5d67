import request from 'supertest';
import { settleJobId } from '@gmg/contracts';
import { settleTask, TaskRepository } from '@gmg/db';
import { createBillingQueue, type BillingQueue } from '@gmg/queue';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/** POST /v1/tasks/<id>/cancel and /v1/artgen/<id>/cancel through the real app, Postgres and Redis. */
let h: EdgeHarness;
let billing: BillingQueue;
beforeAll(async () => {
  h = await startEdgeHarness();
  billing = createBillingQueue(h.redis, h.prefix);
});
afterAll(async () => {
  await billing?.close();
  await h?.close();
});

const lumen = { model: 'lumen-2-pro', prompt: 'a lighthouse' };
const as = (key: string) => ({ Authorization: `Bearer ${key}` });
const submit = async (key: string, path = '/v1/images/generations', body: object = lumen): Promise<string> => {
  const res = await request(h.baseUrl).post(path).set(as(key)).send(body);
  expect(res.status).toBe(200);
  return res.body.data.task_id ?? res.body.data[0].task_id;
};
const ledgerOf = async (taskId: string) =>
  (
    (await h.db.dataSource.query(`SELECT kind, amount FROM ledger_entries WHERE task_id = $1 ORDER BY id`, [taskId])) as Array<{ kind: string; amount: string }>
  ).map((e) => `${e.kind}:${e.amount}`);

describe('POST /v1/tasks/<id>/cancel', () => {
  it('cancels a pending task: failed with type cancelled, job dropped, settlement asked for, hold released in full', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const id = await submit(c.key);
    expect((await h.queue('image').getJob(id))?.id).toBe(id);
    const price = (await new TaskRepository(h.db.dataSource).get(id))!.price;

    const res = await request(h.baseUrl).post(`/v1/tasks/${id}/cancel`).set(as(c.key));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      code: 200,
      data: expect.objectContaining({ id, status: 'failed', cost: 0, error: { code: 'task_failed', message: 'Task cancelled', type: 'cancelled' } }),
    });
    expect(await h.queue('image').getJob(id)).toBeUndefined();
    expect((await billing.getJob(settleJobId(id)))?.data).toEqual({ taskId: id });
    // What the billing worker does with that job:
    expect(await settleTask(h.db.dataSource, id)).toBe('released');
    expect(await ledgerOf(id)).toEqual([`hold:${price}`, `release:${price}`]);
    const bal = await h.db.dataSource.query(`SELECT available, held FROM accounts WHERE id = $1`, [c.accountId]);
    expect(bal[0]).toEqual({ available: String(10_000_000n), held: '0' });

    const poll = await request(h.baseUrl).get(`/v1/tasks/${id}`).set(as(c.key));
    expect(poll.body.data).toMatchObject({ status: 'failed', error: { type: 'cancelled' } });
  });

  it('answers 409 naming the state for a task that already ended, and changes nothing', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const id = await submit(c.key);
    await new TaskRepository(h.db.dataSource).complete(id, { images: [{ url: 'http://sim/1.png' }] });
    const res = await request(h.baseUrl).post(`/v1/tasks/${id}/cancel`).set(as(c.key));
    expect(res.status).toBe(409);
    expect(res.body.error).toEqual({ code: 409, type: 'invalid_request_error', message: `Task ${id} is already completed and cannot be cancelled` });
    expect((await new TaskRepository(h.db.dataSource).get(id))!.status).toBe('completed');
    const again = await request(h.baseUrl).post(`/v1/tasks/${id}/cancel`).set(as(c.key));
    expect(again.status).toBe(409);
  });

  it("answers 404 for another account's task and for a missing one, alike, and leaves the task running", async () => {
    const owner = await h.newCustomer({ balance: 10 });
    const stranger = await h.newCustomer({ balance: 10 });
    const id = await submit(owner.key);
    const foreign = await request(h.baseUrl).post(`/v1/tasks/${id}/cancel`).set(as(stranger.key));
    const missing = await request(h.baseUrl).post('/v1/tasks/task_doesnotexist123/cancel').set(as(stranger.key));
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toEqual({ code: 404, type: 'not_found_error', message: `Task ${id} not found` });
    expect(missing.status).toBe(404);
    expect(missing.body.error.type).toBe('not_found_error');
    expect((await new TaskRepository(h.db.dataSource).get(id))!.status).toBe('pending');
    expect((await h.queue('image').getJob(id))?.id).toBe(id);
  });

  it('needs a key (401) and only POST (405)', async () => {
    expect((await request(h.baseUrl).post('/v1/tasks/task_x/cancel')).status).toBe(401);
    const c = await h.newCustomer({ balance: 1 });
    expect((await request(h.baseUrl).get('/v1/tasks/task_x/cancel').set(as(c.key))).status).toBe(405);
  });
});

describe('POST /v1/artgen/<id>/cancel', () => {
  it('cancels an art task and answers the native task (FAILURE); a non-art task is 404 not_found in the art shape', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const art = await submit(c.key, '/v1/artgen/generations/imagine', { prompt: 'a lighthouse' });
    const res = await request(h.baseUrl).post(`/v1/artgen/${art}/cancel`).set(as(c.key));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: art, status: 'FAILURE', fail_reason: 'Task cancelled' });
    const again = await request(h.baseUrl).post(`/v1/artgen/${art}/cancel`).set(as(c.key));
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: { type: 'invalid_request_error', message: `Task ${art} is already failed and cannot be cancelled` } });

    const image = await submit(c.key);
    const notArt = await request(h.baseUrl).post(`/v1/artgen/${image}/cancel`).set(as(c.key));
    expect(notArt.status).toBe(404);
    expect(notArt.body).toEqual({ error: { type: 'not_found', message: `Task ${image} not found` } });
    expect((await new TaskRepository(h.db.dataSource).get(image))!.status).toBe('pending');
  });
});
