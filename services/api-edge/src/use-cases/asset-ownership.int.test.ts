import request from 'supertest';
import { AssetGroupRepository, AssetRepository, ChannelRepository, newAssetGroupId, newTaskId } from '@gmg/db';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/** Spec 1.5 / 4.8: motion-2.0 renders only approved avatar assets of the caller's own account. */

let h: EdgeHarness;
let channelA: string;
let channelB: string;
beforeAll(async () => {
  h = await startEdgeHarness();
  const channels = new ChannelRepository(h.db.dataSource);
  channelA = (await channels.create({ name: 'a', baseUrl: 'http://127.0.0.1:1' })).id;
  channelB = (await channels.create({ name: 'b', baseUrl: 'http://127.0.0.1:2' })).id;
});
afterAll(async () => {
  await h?.close();
});

const VIDEOS = '/v1/videos/generations';

/**
 * An avatar batch of `accountId` with one asset `assetId` reviewed by `channel` as upstream asset `up_<assetId>`
 * (what POST /v1/motion2/private-avatar and worker-avatar produce), its task `taskStatus`.
 */
async function reviewedAsset(
  c: { accountId: string; keyId: string },
  assetId: string,
  opts: { status?: 'Active' | 'Rejected' | 'Pending'; taskStatus?: string; channel?: string } = {},
): Promise<void> {
  const taskId = newTaskId();
  await h.db.dataSource.query(
    `INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, status, progress, request, price,
                        price_snapshot, deadline_at, completed_at)
     VALUES ($1,$2,$3,'motion-2.0-avatar','motion-2.0-avatar','avatar',$4,100,'{}',0,'{}', now() + interval '1 hour', now())`,
    [taskId, c.accountId, c.keyId, opts.taskStatus ?? 'completed'],
  );
  const groupId = newAssetGroupId();
  await new AssetGroupRepository(h.db.dataSource).create({ id: groupId, accountId: c.accountId, name: 'g', description: '', autoCreated: true });
  const assets = new AssetRepository(h.db.dataSource);
  await assets.insertBatch(c.accountId, groupId, taskId, [
    { id: assetId, position: 0, assetType: 'Image', name: 'n', url: 'https://cdn.example.com/a.png', projectName: 'default' },
  ]);
  const status = opts.status ?? 'Active';
  if (status !== 'Pending') {
    await assets.recordReviews(taskId, opts.channel ?? channelA, [
      status === 'Active'
        ? { position: 0, status, upstreamAssetId: `up_${assetId}`, upstreamAssetUrl: `asset://up_${assetId}` }
        : { position: 0, status, reason: 'no' },
    ]);
  }
}

const videoTasks = async (accountId: string) =>
  h.db.dataSource.query(`SELECT request FROM tasks WHERE account_id = $1 AND pool = 'video'`, [accountId]) as Promise<Array<{ request: any }>>;
const send = (key: string, ids: string[]) =>
  request(h.baseUrl)
    .post(VIDEOS)
    .set('Authorization', `Bearer ${key}`)
    .send({ model: 'motion-2.0', prompt: 'wave hello', asset_urls: ids.map((id) => `asset://${id}`) });

describe('motion-2.0 asset references', () => {
  it('accepts approved assets of the same account, rewritten to the upstream reference and pinned to the reviewing channel', async () => {
    const c = await h.newCustomer({ balance: 10 });
    await reviewedAsset(c, 'asset_mine1');
    await reviewedAsset(c, 'asset_mine2');
    const res = await send(c.key, ['asset_mine1', 'asset_mine2']);
    expect(res.status).toBe(200);
    const [task] = await videoTasks(c.accountId);
    expect(task.request.upstreamBody.asset_urls).toEqual(['asset://up_asset_mine1', 'asset://up_asset_mine2']);
    expect(task.request.pinnedChannelId).toBe(channelA);
  });

  it("refuses another account's asset exactly like a missing one, before any charge", async () => {
    const owner = await h.newCustomer({ balance: 10 });
    await reviewedAsset(owner, 'asset_theirs');
    const thief = await h.newCustomer({ balance: 10 });
    const foreign = await send(thief.key, ['asset_theirs']);
    const missing = await send(thief.key, ['asset_nobody']);
    expect(foreign.status).toBe(400);
    expect(foreign.body.error).toMatchObject({ type: 'invalid_request_error', message: expect.stringContaining('asset_urls.0') });
    expect(missing.status).toBe(400);
    expect(missing.body.error.message.replace('asset_nobody', 'X')).toBe(foreign.body.error.message.replace('asset_theirs', 'X'));
    expect(await videoTasks(thief.accountId)).toHaveLength(0);
  });

  it.each([
    ['rejected', { status: 'Rejected' as const }],
    ['still under review', { status: 'Pending' as const, taskStatus: 'processing' }],
    ['approved in a batch that failed', { taskStatus: 'failed' }],
  ])('refuses an asset %s', async (_what, opts) => {
    const c = await h.newCustomer({ balance: 10 });
    const id = `asset_${Math.random().toString(36).slice(2)}`;
    await reviewedAsset(c, id, opts);
    const res = await send(c.key, [id]);
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('asset_urls.0');
    expect(await videoTasks(c.accountId)).toHaveLength(0);
  });

  it('refuses assets approved by two different channels in one request, naming the field', async () => {
    const c = await h.newCustomer({ balance: 10 });
    await reviewedAsset(c, 'asset_on_a', { channel: channelA });
    await reviewedAsset(c, 'asset_on_b', { channel: channelB });
    const res = await send(c.key, ['asset_on_a', 'asset_on_b']);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', message: expect.stringContaining('`asset_urls.1`') });
    expect(await videoTasks(c.accountId)).toHaveLength(0);
  });
});

describe('motion-2.0 assets where a client puts an image (issue 27)', () => {
  const sendIn = (key: string, fields: Record<string, unknown>) =>
    request(h.baseUrl)
      .post(VIDEOS)
      .set('Authorization', `Bearer ${key}`)
      .send({ model: 'motion-2.0', prompt: 'wave hello', ...fields });

  it('image_urls and first_frame_image work as asset_urls, with the same ownership check naming the field sent', async () => {
    const owner = await h.newCustomer({ balance: 10 });
    await reviewedAsset(owner, 'asset_img1');
    const thief = await h.newCustomer({ balance: 10 });
    for (const [fields, field] of [
      [{ image_urls: ['asset://asset_img1'] }, 'image_urls.0'],
      [{ first_frame_image: 'asset://asset_img1' }, 'first_frame_image'],
    ] as const) {
      expect((await sendIn(owner.key, fields)).status).toBe(200);
      const stolen = await sendIn(thief.key, fields);
      expect({ status: stolen.status, message: stolen.body.error?.message }).toEqual({ status: 400, message: expect.stringContaining(`\`${field}\``) });
    }
    const tasks = await videoTasks(owner.accountId);
    expect(tasks.map((t) => t.request.upstreamBody)).toEqual([0, 1].map(() => expect.objectContaining({ asset_urls: ['asset://up_asset_img1'] })));
    expect(tasks.every((t) => t.request.upstreamBody.image_urls === undefined && t.request.upstreamBody.first_frame_image === undefined)).toBe(true);
    expect(await videoTasks(thief.accountId)).toHaveLength(0);
    // an image that is not an asset, or assets in two fields at once, is a 400 naming the field
    expect((await sendIn(owner.key, { image_urls: ['https://cdn.example.com/a.png'] })).body.error.message).toContain('image_urls');
    expect((await sendIn(owner.key, { asset_urls: ['asset://asset_img1'], image_urls: ['asset://asset_img1'] })).status).toBe(400);
  });
});
