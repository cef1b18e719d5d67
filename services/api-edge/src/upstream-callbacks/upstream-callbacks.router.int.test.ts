import { QUEUES } from '@gmg/contracts';
import { DuePolls, queueKeyPrefix, shardOf } from '@gmg/queue';
import { createCallbackLinks } from '@gmg/upstream';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

const KEY = 'test-upstream-callback-key-0123456789abcdef';
const T0 = new Date('2030-01-01T00:00:00Z');
let clock = T0;
let h: EdgeHarness;

beforeAll(async () => {
  h = await startEdgeHarness({ env: { UPSTREAM_CALLBACK_SIGNING_KEY: KEY, QUEUE_SHARDS: 'video=2' }, deps: { now: () => clock } });
});
afterAll(() => h.close());
beforeEach(() => {
  clock = T0;
});

const nowS = (): number => Math.floor(clock.getTime() / 1000);
/** The due polls of the task's shard, as the video workers see them. */
const duePolls = (taskId: string): DuePolls => new DuePolls(h.redis, queueKeyPrefix(h.prefix, QUEUES.video, shardOf(taskId, 2)), 30_000);
const dueAt = async (taskId: string): Promise<string | null> => h.redis.zscore(duePolls(taskId).keys.due, taskId);
/** A callback URL as a worker signs it, posted to the listening edge. */
const urlOf = (taskId: string, opts: { key?: string; expiresAtS?: number } = {}): string => {
  const u = new URL(
    createCallbackLinks({ baseUrl: 'https://gw.example.com', signingKey: opts.key ?? KEY }).url(taskId, 'video', opts.expiresAtS ?? nowS() + 3600),
  );
  return `${h.baseUrl}${u.pathname}`;
};
const post = (url: string, body: unknown = { status: 'OK' }) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const callbackKeys = async (taskId: string): Promise<string[]> => h.redis.keys(`{${h.prefix}:upcb:${taskId}}*`);

describe('POST /v1/upstream-callbacks/<token> (vendor callbacks, a nudge only)', () => {
  it('a valid callback makes the waiting poll due now; its replay does nothing; a new body nudges again', async () => {
    const id = 'task_cbvalid1';
    const later = T0.getTime() + 60_000;
    await duePolls(id).add(id, later, 0);
    const url = urlOf(id);
    const res = await post(url, { request_id: 'r1', status: 'OK' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true });
    expect(await dueAt(id)).toBe(String(T0.getTime()));

    // the worker polled and put it back for later; the same delivery again changes nothing
    await duePolls(id).add(id, later, 0);
    expect((await post(url, { request_id: 'r1', status: 'OK' })).status).toBe(200);
    expect(await dueAt(id)).toBe(String(later));
    // another delivery (another body) is a new nudge
    expect((await post(url, { request_id: 'r1', status: 'ERROR' })).status).toBe(200);
    expect(await dueAt(id)).toBe(String(T0.getTime()));
  });

  it('refuses forged, re-signed, malformed and expired tokens with 401 in the error shape, writing nothing', async () => {
    const id = 'task_cbforged1';
    const later = T0.getTime() + 60_000;
    await duePolls(id).add(id, later, 0);
    const good = urlOf(id);
    const sig = good.split('.').pop()!;
    const forged = [
      `${good.slice(0, -2)}${sig.endsWith('AA') ? 'BB' : 'AA'}`,
      urlOf(id, { key: `${KEY}-another` }),
      good.replace(`${id}.video.`, `task_cbother1.video.`),
      `${h.baseUrl}/v1/upstream-callbacks/${id}.video.${nowS() + 60}`,
      `${h.baseUrl}/v1/upstream-callbacks/nothing`,
      urlOf(id, { expiresAtS: nowS() }),
    ];
    for (const url of forged) {
      const res = await post(url);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: { code: 401, message: 'invalid or expired callback token', type: 'authentication_error' } });
    }
    expect(await dueAt(id)).toBe(String(later));
    expect(await callbackKeys(id)).toEqual([]);
    expect(await callbackKeys('task_cbother1')).toEqual([]);
    expect((await fetch(good)).status).toBe(405);
  });

  it('a late callback (the task is not waiting: ended) answers 200 and writes no poll', async () => {
    const id = 'task_cbended1';
    const res = await post(urlOf(id));
    expect(res.status).toBe(200);
    expect(await dueAt(id)).toBeNull();
  });

  it('caps the nudges of one task and the size of a callback body', async () => {
    const id = 'task_cbflood1';
    const later = T0.getTime() + 60_000;
    const url = urlOf(id);
    for (let i = 0; i < 20; i++) expect((await post(url, { n: i })).status).toBe(200);
    await duePolls(id).add(id, later, 0);
    // the 21st distinct delivery is answered but moves nothing
    expect((await post(url, { n: 20 })).status).toBe(200);
    expect(await dueAt(id)).toBe(String(later));

    const big = await post(urlOf('task_cbbig1'), { data: 'x'.repeat(1024 * 1024) });
    expect(big.status).toBe(413);
    expect(await callbackKeys('task_cbbig1')).toEqual([]);
  });
});
