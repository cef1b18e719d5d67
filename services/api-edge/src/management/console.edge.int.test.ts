import request from 'supertest';
import { TaskRepository, settleTask } from '@gmg/db';
import { TaskViewStore } from '@gmg/tasks';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/**
 * A task's life as the console sees it, on the real edge (Postgres, Redis, HTTP): a customer submits, the operator
 * finds the task in the list and by its request id, the worker's steps happen (dispatch, completion, settlement:
 * the repository calls the worker makes), and the detail's timeline follows; the customer then reads the same result
 * with only its key (GET /v1/tasks/{id}), as the console's customer pages do.
 */
describe('console reads across a task lifecycle (real edge)', () => {
  let h: EdgeHarness;
  beforeAll(async () => {
    h = await startEdgeHarness();
  });
  afterAll(async () => {
    await h?.close();
  });
  const admin = (path: string) => request(h.baseUrl).get(path).set('Authorization', `Bearer ${h.config.adminToken}`);

  it('shows submitted, dispatched, completed and settled in the detail, and the customer sees the same result with its key', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const sub = await request(h.baseUrl)
      .post('/v1/images/generations')
      .set('Authorization', `Bearer ${c.key}`)
      .send({ model: 'lumen-2-flex', prompt: 'a paper boat' });
    expect(sub.status).toBe(200); // lumen answers shape A (200, spec 2.1)
    const id = sub.body.data[0].task_id as string;
    const requestId = sub.headers['x-request-id'] as string;

    const listed = await admin(`/api/tasks?account_id=${c.accountId}`);
    expect(listed.body.data).toEqual({
      items: [expect.objectContaining({ task_id: id, key_id: c.keyId, status: 'pending', request_id: requestId, settled: false })],
      next_cursor: null,
    });
    const found = await admin(`/api/tasks?request_id=${requestId}`);
    expect(found.body.data).toEqual([expect.objectContaining({ task_id: id })]);

    let detail = (await admin(`/api/tasks/${id}`)).body.data;
    expect(detail.timeline.map((e: { event: string }) => e.event)).toEqual(['submitted', 'hold']);
    expect(detail.request).toMatchObject({ model: 'lumen-2-flex', upstreamBody: { prompt: 'a paper boat' } });
    expect(detail.request).not.toHaveProperty('billing');

    // the worker's steps
    const tasks = new TaskRepository(h.db.dataSource);
    const [{ id: channelId }] = await h.db.dataSource.query(
      `INSERT INTO channels (name, protocol, base_url, api_key) VALUES ('lifecycle', 'gateway', 'http://127.0.0.1:9', 'sk-x') RETURNING id`,
    );
    await tasks.markSubmitted(id, channelId, 'vendor-1');
    const url = 'http://127.0.0.1:8080/v1/results/res/boat.png?expires=9999999999&signature=abc';
    const done = await tasks.complete(id, { images: [{ url, width: 1024, height: 1024 }] });
    await new TaskViewStore(h.redis, h.prefix).write(done!);
    await settleTask(h.db.dataSource, id);

    detail = (await admin(`/api/tasks/${id}`)).body.data;
    expect(detail).toMatchObject({ status: 'completed', settled: true, channel: { id: channelId, name: 'lifecycle' }, upstream_task_id: 'vendor-1' });
    expect(detail.timeline.map((e: { event: string }) => e.event)).toEqual(['submitted', 'hold', 'started', 'completed', 'capture', 'settled']);
    expect(detail.entries.map((e: { kind: string }) => e.kind)).toEqual(['hold', 'capture']);

    const own = await request(h.baseUrl).get(`/v1/tasks/${id}`).set('Authorization', `Bearer ${c.key}`);
    expect(own.status).toBe(200);
    expect(own.body.data.result).toEqual(detail.result);
    expect(own.body.data.result.images[0].url).toBe(url);
    expect(own.body.data.cost).toBe(detail.cost);
    const logs = await request(h.baseUrl).get('/api/logs').set('Authorization', `Bearer ${c.key}`);
    expect(logs.body.data.items[0]).toMatchObject({ type: 'task', task_id: id, status: 'completed', cost: detail.cost });
    // a key cannot read the operator's routes
    expect((await request(h.baseUrl).get(`/api/tasks/${id}`).set('Authorization', `Bearer ${c.key}`)).status).toBe(401);
  });
});
