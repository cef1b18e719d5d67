import request from 'supertest';
import { AccountRepository, TaskRepository } from '@gmg/db';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness();
});
afterAll(async () => {
  await h?.close();
});

const VIDEOS = '/v1/videos/generations';
const IMG = 'https://cdn.example.com/a.png';
const VID = 'https://cdn.example.com/a.mp4';
const send = (key: string, body: Record<string, unknown>) => request(h.baseUrl).post(VIDEOS).set('Authorization', `Bearer ${key}`).send(body);
const taskCount = async (accountId: string) =>
  Number((await h.db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [accountId]))[0].n);

describe('video reference fields are never dropped in silence (issue 27)', () => {
  it('reel-v4: image_urls with video_urls or image_with_roles is the spec 422; either alone is multimodal; nothing charged for a refusal', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const base = { model: 'reel-v4-fast', prompt: 'a cat' };
    for (const refs of [{ video_urls: [VID] }, { image_with_roles: [{ url: IMG, role: 'reference_image' }] }]) {
      const res = await send(c.key, { ...base, image_urls: [IMG], ...refs });
      expect({ status: res.status, type: res.body.error?.type }).toEqual({ status: 422, type: 'invalid_request_error' });
    }
    expect(await taskCount(c.accountId)).toBe(0);
    expect((await new AccountRepository(h.db.dataSource).get(c.accountId))!.held).toBe(0n);
    const ok = await send(c.key, { ...base, image_with_roles: [{ url: IMG, role: 'reference_image' }], video_urls: [VID] });
    expect(ok.status).toBe(200);
    const r = (await new TaskRepository(h.db.dataSource).getRequest(ok.body.data[0].task_id))!;
    expect(r.derived.mode).toBe('multimodal-reference');
  });

  it('a video model that has no such field refuses a reference name with a 400 naming it and what the model takes', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const res = await send(c.key, { model: 'motion-1-0-pro-fast', prompt: 'a cat', video_urls: [VID] });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toEqual(expect.stringMatching(/`video_urls`.*motion-1-0-pro-fast takes media in `image_urls`/));
    expect(await taskCount(c.accountId)).toBe(0);
  });
});
