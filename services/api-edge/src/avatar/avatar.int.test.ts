import { createHash } from 'node:crypto';
import request from 'supertest';
import { GroupRepository } from '@gmg/db';
import { idempotencyKey } from '@gmg/queue';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';
import { AVATAR_MODEL } from './submit-avatar.use-case';

/** POST /v1/motion2/private-avatar and the browse API against real Postgres and Redis (no worker). */

let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness();
});
afterAll(async () => {
  await h?.close();
});

const PATH = '/v1/motion2/private-avatar';
const asset = (i: number) => ({ url: `https://cdn.example.com/a/${i}.png`, name: `asset ${i}` });
const submit = (key: string, body: unknown, idem?: string) => {
  const r = request(h.baseUrl).post(PATH).set('Authorization', `Bearer ${key}`);
  if (idem) r.set('Idempotency-Key', idem);
  return r.send(body as object);
};
const get = (key: string, p: string) => request(h.baseUrl).get(p).set('Authorization', `Bearer ${key}`);
const q = <T = any>(sql: string, params: unknown[]) => h.db.dataSource.query(sql, params) as Promise<T[]>;
const counts = async (accountId: string) =>
  (
    await q(
      `SELECT (SELECT count(*)::int FROM tasks WHERE account_id = $1) AS tasks,
          (SELECT count(*)::int FROM asset_groups WHERE account_id = $1) AS groups,
          (SELECT count(*)::int FROM avatar_assets WHERE account_id = $1) AS assets,
          (SELECT count(*)::int FROM ledger_entries WHERE account_id = $1 AND kind = 'hold') AS holds`,
      [accountId],
    )
  )[0];

describe('POST /v1/motion2/private-avatar', () => {
  it('holds n × the per-asset price, writes the task, an automatic group and the Pending assets, and enqueues', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const res = await submit(c.key, { asset_type: 'Video', project_name: 'launch', assets: [asset(0), asset(1)] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      code: 200,
      data: { id: expect.stringMatching(/^task_/), object: 'motion.avatar.asset.task', status: 'processing', progress: 0, model: 'motion-2.0' },
    });
    const id = res.body.data.id;
    // the acknowledgement's model is one the catalog lists (issue 27), not the internal review task's
    const catalog = await request(h.baseUrl).get('/v1/models').set('Authorization', `Bearer ${c.key}`);
    expect(catalog.body.data.map((m: { id: string }) => m.id)).toContain(res.body.data.model);
    expect(res.body.data.model).not.toBe(AVATAR_MODEL);
    const [task] = await q(`SELECT pool, price, request FROM tasks WHERE id = $1`, [id]);
    expect(task.pool).toBe('avatar');
    expect(BigInt(task.price)).toBe(2n * 50_000n); // avatar-asset@video = 0.05 in infra/prices.json
    expect(task.request.upstreamBody).toEqual({ asset_type: 'Video', project_name: 'launch', assets: [asset(0), asset(1)] });
    const rows = await q(
      `SELECT a.name, a.status, a.position, a.project_name, g.auto_created FROM avatar_assets a JOIN asset_groups g ON g.id = a.group_id WHERE a.task_id = $1 ORDER BY position`,
      [id],
    );
    expect(rows).toEqual([
      { name: 'asset 0', status: 'Pending', position: 0, project_name: 'launch', auto_created: true },
      { name: 'asset 1', status: 'Pending', position: 1, project_name: 'launch', auto_created: true },
    ]);
    expect(await h.queue('avatar').getJob(id)).toBeDefined();
  });

  it('takes the single-asset shorthand, and an existing group of the same account by group_id', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const first = await submit(c.key, { group: { name: 'hosts', description: 'd' }, ...asset(0) });
    expect(first.status).toBe(200);
    const groups = await get(c.key, '/v1/motion2/groups');
    const groupId = groups.body.data.items[0].id;
    expect(groups.body.data.items[0]).toMatchObject({ name: 'hosts', description: 'd', auto_created: false, asset_count: 1 });
    const second = await submit(c.key, { group_id: groupId, assets: [asset(1)] });
    expect(second.status).toBe(200);
    expect((await get(c.key, `/v1/motion2/groups/${groupId}`)).body.data.asset_count).toBe(2);
  });

  it("answers another account's group_id exactly like a missing one, with nothing written", async () => {
    const owner = await h.newCustomer({ balance: 10 });
    await submit(owner.key, { group: { name: 'mine' }, assets: [asset(0)] });
    const ownerGroup = (await get(owner.key, '/v1/motion2/groups')).body.data.items[0].id;
    const other = await h.newCustomer({ balance: 10 });
    const foreign = await submit(other.key, { group_id: ownerGroup, assets: [asset(0)] });
    const missing = await submit(other.key, { group_id: 'group_nothere', assets: [asset(0)] });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.message.replace(ownerGroup, 'X')).toBe(missing.body.error.message.replace('group_nothere', 'X'));
    expect(await counts(other.accountId)).toEqual({ tasks: 0, groups: 0, assets: 0, holds: 0 });
    expect((await get(other.key, `/v1/motion2/groups/${ownerGroup}`)).status).toBe(404);
  });

  it.each([
    [{ assets: Array.from({ length: 21 }, (_, i) => asset(i)) }, 'assets', 'maxItems'],
    [{ assets: [] }, 'assets', 'minItems'],
    [{}, 'assets', 'required'],
    [{ assets: [asset(0)], url: 'https://cdn.example.com/x.png' }, 'url', 'exclusive'],
    [{ url: 'https://cdn.example.com/x.png' }, 'name', 'required'],
    [{ assets: [{ url: 'https://cdn.example.com/x.png' }] }, 'assets.0.name', 'required'],
    [{ assets: [asset(0)], group: { name: 'g' }, group_id: 'group_x' }, 'group_id', 'exclusive'],
    [{ assets: [asset(0)], asset_type: 'image' }, 'asset_type', 'enum'],
    [{ assets: [asset(0), { url: 'http://169.254.169.254/latest/meta-data', name: 'm' }] }, 'assets.1.url', 'media-url'],
    [{ url: 'http://127.0.0.1/a.png', name: 'loop' }, 'url', 'media-url'],
    [{ assets: [asset(0)], group: { description: 'no name' } }, 'group.name', 'required'],
  ])('refuses %j: 400 naming `%s` (%s), nothing written, nothing held', async (body, field, rule) => {
    const c = await h.newCustomer({ balance: 10 });
    const res = await submit(c.key, body);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 400, type: 'invalid_request_error' });
    expect(res.body.error.message).toContain(`\`${field}\``);
    expect({ field, rule }).toEqual({ field, rule });
    expect(await counts(c.accountId)).toEqual({ tasks: 0, groups: 0, assets: 0, holds: 0 });
  });

  it('answers 402 on a low balance and leaves no group and no asset behind', async () => {
    const c = await h.newCustomer({ balance: 0 });
    const res = await submit(c.key, { group: { name: 'g' }, assets: [asset(0)] });
    expect(res.status).toBe(402);
    expect(await counts(c.accountId)).toEqual({ tasks: 0, groups: 0, assets: 0, holds: 0 });
  });

  it('a replayed Idempotency-Key answers the first task and holds once', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const a = await submit(c.key, { assets: [asset(0)] }, 'idem-avatar-1');
    const b = await submit(c.key, { assets: [asset(0)] }, 'idem-avatar-1');
    expect(b.body.data.id).toBe(a.body.data.id);
    expect(await counts(c.accountId)).toEqual({ tasks: 1, groups: 1, assets: 1, holds: 1 });
  });

  it('answers a retry whose Redis idempotency record was lost with the first task: one hold, one group, one asset', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const a = await submit(c.key, { assets: [asset(0)] }, 'idem-avatar-lost');
    expect(a.status).toBe(200);
    expect(await h.redis.del(idempotencyKey(h.prefix, c.keyId, createHash('sha256').update('idem-avatar-lost').digest('hex')))).toBe(1);
    const b = await submit(c.key, { assets: [asset(0)] }, 'idem-avatar-lost');
    expect(b.status).toBe(200);
    expect(b.body.data.id).toBe(a.body.data.id);
    expect(await counts(c.accountId)).toEqual({ tasks: 1, groups: 1, assets: 1, holds: 1 });
  });

  it('answers 429 when the key has no in-flight room, leaving no group and no asset behind', async () => {
    await new GroupRepository(h.db.dataSource).upsert({ name: 'avatar-one-inflight', priceRatio: 1, models: null, rpsLimit: null, inflightLimit: 1 });
    const c = await h.newCustomer({ balance: 10, groupName: 'avatar-one-inflight' });
    expect((await submit(c.key, { assets: [asset(0)] })).status).toBe(200);
    const res = await submit(c.key, { group: { name: 'second' }, assets: [asset(1)] });
    expect(res.status).toBe(429);
    expect(await counts(c.accountId)).toEqual({ tasks: 1, groups: 1, assets: 1, holds: 1 });
  });

  it('refuses a key whose model list does not allow motion-2.0 with 403', async () => {
    const c = await h.newCustomer({ balance: 10, models: ['lumen-2-pro'] });
    const res = await submit(c.key, { assets: [asset(0)] });
    expect(res.status).toBe(403);
    expect(await counts(c.accountId)).toEqual({ tasks: 0, groups: 0, assets: 0, holds: 0 });
  });
});

describe('browsing groups and assets', () => {
  it("pages through the caller's own assets, newest first, and never shows another account's", async () => {
    const c = await h.newCustomer({ balance: 10 });
    for (let i = 0; i < 3; i++) await submit(c.key, { assets: [asset(2 * i), asset(2 * i + 1)] });
    const other = await h.newCustomer({ balance: 10 });
    await submit(other.key, { assets: [asset(9)] });

    const seen: string[] = [];
    let after: string | null = null;
    for (let pageNo = 0; pageNo < 10; pageNo++) {
      const res: request.Response = await get(c.key, `/v1/motion2/assets?limit=4${after ? `&after=${after}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.items.map((a: any) => a.asset_id));
      for (const a of res.body.data.items) expect(a).toMatchObject({ asset_url: `asset://${a.asset_id}`, status: 'Pending', asset_type: 'Image' });
      after = res.body.data.next_after;
      if (!res.body.data.has_more) break;
    }
    const own = await q<{ id: string }>(`SELECT id FROM avatar_assets WHERE account_id = $1`, [c.accountId]);
    expect(seen.sort()).toEqual(own.map((r) => r.id).sort());
    expect(seen).toHaveLength(6);

    const [theirs] = await q<{ id: string }>(`SELECT id FROM avatar_assets WHERE account_id = $1`, [other.accountId]);
    expect((await get(c.key, `/v1/motion2/assets/${theirs.id}`)).status).toBe(404);
    expect((await get(c.key, '/v1/motion2/groups')).body.data.items).toHaveLength(3);
  });

  it('filters assets by status and refuses a bad limit or status naming the parameter', async () => {
    const c = await h.newCustomer({ balance: 10 });
    await submit(c.key, { assets: [asset(0)] });
    expect((await get(c.key, '/v1/motion2/assets?status=Active')).body.data.items).toEqual([]);
    expect((await get(c.key, '/v1/motion2/assets?status=Pending')).body.data.items).toHaveLength(1);
    const badLimit = await get(c.key, '/v1/motion2/assets?limit=500');
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.error.message).toContain('`limit`');
    const badStatus = await get(c.key, '/v1/motion2/assets?status=Approved');
    expect(badStatus.status).toBe(400);
    expect(badStatus.body.error.message).toContain('`status`');
  });
});
