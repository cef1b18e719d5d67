import { idempotencyKey } from '@gmg/queue';
import { createHash } from 'node:crypto';
import request from 'supertest';
import { AccountRepository } from '@gmg/db';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/**
 * The Redis idempotency record answers replays. When it is lost (Redis restarted without persistence, evicted, or
 * the store after a committed submit failed), the database constraint on (api_key_id, idempotency_key) still
 * refuses a second task: the retry gets the first task's acknowledgement and costs nothing.
 */
let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness();
});
afterAll(async () => {
  await h?.close();
});

it('answers a retry whose Redis idempotency record was lost with the first task, holding money once', async () => {
  const c = await h.newCustomer({ balance: 10 });
  const body = { model: 'lumen-2-flex', prompt: 'exactly once' };
  const send = () => request(h.baseUrl).post('/v1/images/generations').set('Authorization', `Bearer ${c.key}`).set('Idempotency-Key', 'order-99').send(body);

  const first = await send();
  expect(first.status).toBe(200);
  const redisKey = idempotencyKey(h.prefix, c.keyId, createHash('sha256').update('order-99').digest('hex'));
  expect(await h.redis.del(redisKey)).toBe(1); // the record is gone

  const retry = await send();
  expect(retry.status).toBe(200);
  expect(retry.body.data[0].task_id).toBe(first.body.data[0].task_id);
  const [{ tasks, holds }] = await h.db.dataSource.query(
    `SELECT (SELECT count(*)::int FROM tasks WHERE account_id = $1) AS tasks,
            (SELECT count(*)::int FROM ledger_entries WHERE account_id = $1 AND kind = 'hold') AS holds`,
    [c.accountId],
  );
  expect({ tasks, holds }).toEqual({ tasks: 1, holds: 1 });
});

it('answers 422 to another request under the same key after the Redis record was lost, holding nothing more', async () => {
  const c = await h.newCustomer({ balance: 10 });
  const send = (prompt: string) =>
    request(h.baseUrl)
      .post('/v1/images/generations')
      .set('Authorization', `Bearer ${c.key}`)
      .set('Idempotency-Key', 'order-100')
      .send({ model: 'lumen-2-flex', prompt });
  expect((await send('the first')).status).toBe(200);
  await h.redis.del(idempotencyKey(h.prefix, c.keyId, createHash('sha256').update('order-100').digest('hex')));

  const other = await send('something else');
  expect(other.status).toBe(422);
  expect(other.body.error).toMatchObject({ code: 422, type: 'invalid_request_error' });
  const [{ tasks, holds }] = await h.db.dataSource.query(
    `SELECT (SELECT count(*)::int FROM tasks WHERE account_id = $1) AS tasks,
            (SELECT count(*)::int FROM ledger_entries WHERE account_id = $1 AND kind = 'hold') AS holds`,
    [c.accountId],
  );
  expect({ tasks, holds }).toEqual({ tasks: 1, holds: 1 });
});

it('lets a client that got 402 top up and retry with the same Idempotency-Key', async () => {
  const c = await h.newCustomer({ balance: 0 });
  const send = () =>
    request(h.baseUrl)
      .post('/v1/images/generations')
      .set('Authorization', `Bearer ${c.key}`)
      .set('Idempotency-Key', 'after-topup')
      .send({ model: 'lumen-2-flex', prompt: 'paid for later' });
  expect((await send()).status).toBe(402);
  await new AccountRepository(h.db.dataSource).topup(c.accountId, 10_000_000n, { reason: 'test' });
  const retry = await send();
  expect(retry.status).toBe(200);
  expect(retry.headers['idempotent-replayed']).toBeUndefined();
  expect(retry.body.data[0].task_id).toMatch(/^task_/);
});
