import request from 'supertest';
import { BacklogGate, Producers, createRedis, type Redis } from '@gmg/queue';
import { renderMetrics } from '@gmg/observability';
import { TEST_REDIS_TARGET, deleteRedisPrefix, uniqueRedisPrefix } from '@gmg/testing';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/**
 * A pool's task backlog at its cap (libs/queue BACKLOG_CAPS.taskJobs; 3 here): no worker consumes, so accepted tasks
 * wait. The next submit is refused before any money moves — 503 service_unavailable in the spec's error shape with
 * Retry-After, no task row, no hold — and counted; once the backlog has room again a submit is accepted.
 */
let h: EdgeHarness;
let redis: Redis;
let producers: Producers;
const prefix = uniqueRedisPrefix();
beforeAll(async () => {
  redis = createRedis(TEST_REDIS_TARGET, 'client');
  producers = new Producers(redis, prefix, {}, undefined, new BacklogGate(3, 0));
  h = await startEdgeHarness({ env: { QUEUE_PREFIX: prefix }, deps: { producers } });
});
afterAll(async () => {
  await h?.close();
  await producers?.close();
  await deleteRedisPrefix(redis, prefix);
  await redis?.quit();
});

const refused = async (): Promise<number> =>
  Number(new RegExp(`gmg_backlog_deferred_total\\{queue="${producers.tasks.image[0]!.name}"\\} (\\d+)`).exec((await renderMetrics()).body)?.[1] ?? 0);

it('refuses a submit with 503 before the hold while the pool backlog is at its cap, and accepts again once it has room', async () => {
  const c = await h.newCustomer({ balance: 5 });
  const submit = () =>
    request(h.baseUrl)
      .post('/v1/images/generations')
      .set({ Authorization: `Bearer ${c.key}` })
      .send({ model: 'lumen-2-pro', prompt: 'a lighthouse' });
  for (let i = 0; i < 3; i++) expect((await submit()).status).toBe(200);
  const before = await refused();
  const res = await submit();
  expect(res.status).toBe(503);
  expect(res.headers['retry-after']).toBe('5');
  expect(res.body).toEqual({
    error: { code: 503, type: 'service_unavailable', message: expect.stringMatching(/image task queue is full; nothing was charged/) },
  });
  expect((await refused()) - before).toBe(1);
  const rows = async (sql: string): Promise<number> => Number((await h.db.dataSource.query(sql, [c.accountId]))[0].n);
  expect(await rows(`SELECT count(*) AS n FROM tasks WHERE account_id = $1`)).toBe(3);
  expect(await rows(`SELECT count(*) AS n FROM ledger_entries WHERE account_id = $1 AND kind = 'hold'`)).toBe(3);

  // a worker took one: room again
  const [job] = await producers.tasks.image[0]!.getJobs(['wait']);
  await job!.remove();
  expect((await submit()).status).toBe(200);
  expect(await rows(`SELECT count(*) AS n FROM tasks WHERE account_id = $1`)).toBe(4);
});
