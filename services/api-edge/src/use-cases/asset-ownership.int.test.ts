import request from 'supertest';
import { newTaskId } from '@gmg/db';
import { startEdgeHarness, type EdgeHarness } from '../test-support/edge-harness';

/** Spec 1.5 / 4.8: motion-2.0 renders only approved avatar assets of the caller's own account. */

let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness();
});
afterAll(async () => {
  await h?.close();
});

const VIDEOS = '/v1/videos/generations';

/** A completed avatar task of `accountId` that approved `assetId` (what POST /v1/motion2/private-avatar will produce). */
async function approvedAsset(accountId: string, keyId: string, assetId: string, status = 'Active'): Promise<void> {
  const asset = { asset_id: assetId, asset_url: `asset://${assetId}`, status };
  await h.db.dataSource.query(
    `INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, status, progress, request, price,
                        price_snapshot, result, deadline_at, completed_at)
     VALUES ($1,$2,$3,'motion-2.0-avatar','motion-2.0-avatar','avatar','completed',100,'{}',0,'{}',$4, now() + interval '1 hour', now())`,
    [newTaskId(), accountId, keyId, JSON.stringify({ assets: [asset], usable_assets: status === 'Active' ? [asset] : [] })],
  );
}

const heldTasks = async (accountId: string) =>
  Number((await h.db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1 AND pool = 'video'`, [accountId]))[0].n);

describe('motion-2.0 asset ownership', () => {
  it('accepts an approved asset of the same account', async () => {
    const c = await h.newCustomer({ balance: 10 });
    await approvedAsset(c.accountId, c.keyId, 'av_mine');
    const res = await request(h.baseUrl).post(VIDEOS).set('Authorization', `Bearer ${c.key}`)
      .send({ model: 'motion-2.0', prompt: 'wave hello', asset_urls: ['asset://av_mine'] });
    expect(res.status).toBe(200);
    expect(await heldTasks(c.accountId)).toBe(1);
  });

  it("refuses another account's asset exactly like a missing one, before any charge", async () => {
    const owner = await h.newCustomer({ balance: 10 });
    await approvedAsset(owner.accountId, owner.keyId, 'av_theirs');
    const thief = await h.newCustomer({ balance: 10 });
    const send = (id: string) => request(h.baseUrl).post(VIDEOS).set('Authorization', `Bearer ${thief.key}`)
      .send({ model: 'motion-2.0', prompt: 'wave hello', asset_urls: [`asset://${id}`] });
    const foreign = await send('av_theirs');
    const missing = await send('av_nobody');
    expect(foreign.status).toBe(400);
    expect(foreign.body.error).toMatchObject({ type: 'invalid_request_error', message: expect.stringContaining('asset_urls.0') });
    expect(missing.body.error.message.replace('av_nobody', 'X')).toBe(foreign.body.error.message.replace('av_theirs', 'X'));
    expect(await heldTasks(thief.accountId)).toBe(0);
  });

  it('refuses an asset that was submitted but not approved', async () => {
    const c = await h.newCustomer({ balance: 10 });
    await approvedAsset(c.accountId, c.keyId, 'av_pending', 'Processing');
    const res = await request(h.baseUrl).post(VIDEOS).set('Authorization', `Bearer ${c.key}`)
      .send({ model: 'motion-2.0', prompt: 'wave hello', asset_urls: ['asset://av_pending'] });
    expect(res.status).toBe(400);
  });
});
