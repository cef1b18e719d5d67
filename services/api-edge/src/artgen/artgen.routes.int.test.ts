import { taskViewKey } from '@gmg/queue';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { AccountRepository, GroupRepository, TaskRepository } from '@gmg/db';
import { TaskViewStore, artgenJobHash } from '@gmg/tasks';
import { waitFor } from '@gmg/testing';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';
import { artgenCalls } from './artgen.test-kit';

let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness();
});
afterAll(async () => {
  await h?.close();
});

const BASE = '/v1/artgen/generations';
const CHANNEL = randomUUID();
const IMG = 'https://cdn.example.com/a.png';
const IMG2 = 'https://cdn.example.com/b.png';

const { post, submitted } = artgenCalls(() => h);
const get = (key: string, path: string) => request(h.baseUrl).get(path).set('Authorization', `Bearer ${key}`);
const available = async (accountId: string) => (await new AccountRepository(h.db.dataSource).get(accountId))!.available;
/** The task with its whole stored request (a poll's read has only the summary). */
const row = async (id: string) => {
  const repo = new TaskRepository(h.db.dataSource);
  return { ...(await repo.get(id))!, request: (await repo.getRequest(id))! };
};
const taskCount = async (accountId: string) =>
  Number((await h.db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [accountId]))[0].n);

/** What the worker would have left on the row after the upstream finished (the worker is not running here). */
async function finish(id: string, images = 4, native: Record<string, unknown> = { status: 'SUCCESS', grid_image_url: 'http://up/g.png' }) {
  const result = { images: Array.from({ length: images }, (_, i) => ({ url: `http://up/${id}/${i + 1}.png` })) };
  await h.db.dataSource.query(
    `UPDATE tasks SET status = 'completed', progress = 100, channel_id = $2, upstream_task_id = $3, result = $4, native = $5,
            started_at = now(), completed_at = now() WHERE id = $1`,
    [id, CHANNEL, `up_${id}`, JSON.stringify(result), JSON.stringify(native)],
  );
  await new TaskViewStore(h.redis, h.prefix).write(await row(id));
}

const expectArtError = (res: request.Response, status: number, type: string) => {
  expect(res.status).toBe(status);
  expect(res.body).toEqual({ error: { type, message: expect.any(String) } });
};

describe('art suite routes', () => {
  it('imagine: art acknowledgement, held price, artgen job, native and unified views', async () => {
    const c = await h.newCustomer({ balance: 5 });
    const before = await available(c.accountId);
    const res = await post(c.key, `${BASE}/imagine`, { prompt: 'a lighthouse --ar 16:9 --v 8.2 --fast', metadata: { ref: 'x' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ code: 200, data: { task_id: expect.stringMatching(/^task_/), action: 'IMAGINE', status: 'SUBMITTED' } });
    const id = res.body.data.task_id as string;
    const t = await row(id);
    expect(t).toMatchObject({ model: 'artgen', pool: 'artgen', status: 'pending' });
    expect(t.request.upstreamPath).toBe('/v1/artgen/generations/imagine');
    const price = 75_000n; // artgen@imagine-v8.2-fast = 0.075 in infra/prices.json (minor units: 1 unit = 1,000,000)
    expect(t.price).toBe(price);
    expect(await available(c.accountId)).toBe(before - price);
    expect((await h.queue('artgen').getJob(id))?.id).toBe(id);

    const native = await get(c.key, `/v1/artgen/${id}`);
    expect(native.status).toBe(200);
    expect(native.body).toMatchObject({
      id,
      action: 'IMAGINE',
      status: 'SUBMITTED',
      progress: '0%',
      prompt: 'a lighthouse --ar 16:9 --v 8.2 --fast',
      image_urls: [],
      buttons: [],
    });
    const stored = JSON.parse((await h.redis.get(taskViewKey(h.prefix, id)))!);
    expect(stored.artgen).toMatchObject({ id, status: 'SUBMITTED', action: 'IMAGINE' });
    const unified = await get(c.key, `/v1/tasks/${id}`);
    expect(unified.body.data).toMatchObject({ id, model: 'artgen', status: 'pending' });
    // the bare path is imagine too
    expect((await post(c.key, BASE, { prompt: 'x' })).body.data.action).toBe('IMAGINE');
  });

  it('refuses a key whose model list lacks artgen with 403 permission_error, nothing charged', async () => {
    const c = await h.newCustomer({ balance: 5, models: ['lumen-2-pro'] });
    const before = await available(c.accountId);
    expectArtError(await post(c.key, `${BASE}/imagine`, { prompt: 'x' }), 403, 'permission_error');
    expect(await available(c.accountId)).toBe(before);
    expect(await taskCount(c.accountId)).toBe(0);
  });

  it('refuses a key whose group does not list artgen with 403, nothing charged', async () => {
    await new GroupRepository(h.db.dataSource).upsert({ name: 'images-only', priceRatio: 1, models: ['lumen-2-pro'], rpsLimit: null, inflightLimit: null });
    const c = await h.newCustomer({ balance: 5, groupName: 'images-only' });
    const before = await available(c.accountId);
    expectArtError(await post(c.key, `${BASE}/imagine`, { prompt: 'x' }), 403, 'permission_error');
    expect(await available(c.accountId)).toBe(before);
    expect(await taskCount(c.accountId)).toBe(0);
  });

  it('replays an art submission under the same Idempotency-Key: same task, one hold', async () => {
    const c = await h.newCustomer({ balance: 5 });
    const send = () =>
      request(h.baseUrl).post(`${BASE}/imagine`).set('Authorization', `Bearer ${c.key}`).set('Idempotency-Key', 'art-key-1').send({ prompt: 'once' });
    const first = await send();
    const second = await send();
    expect(second.body).toEqual(first.body);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(await taskCount(c.accountId)).toBe(1);
    const holds = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = $1 AND kind = 'hold'`, [c.accountId]);
    expect(holds[0].n).toBe(1);
  });

  it.each([
    ['blend with one image', 'blend', { image_urls: [IMG] }, 'image_urls'],
    ['blend with a prompt', 'blend', { image_urls: [IMG, IMG2], prompt: 'x' }, 'prompt'],
    ['imagine without prompt', 'imagine', { size: '1:1' }, 'prompt'],
    ['a model other than artgen', 'imagine', { prompt: 'x', model: 'lumen-2-pro' }, 'model'],
    ['pan with an unknown direction', 'pan', { task_id: 'task_abc', direction: 'sideways' }, 'direction'],
  ])('refuses %s with 400 in the art shape naming the field, nothing charged', async (_name, action, body, field) => {
    const c = await h.newCustomer({ balance: 5 });
    const before = await available(c.accountId);
    const res = await post(c.key, `${BASE}/${action}`, body);
    expectArtError(res, 400, 'invalid_request_error');
    expect(res.body.error.message).toContain(field);
    expect(await available(c.accountId)).toBe(before);
    expect(await taskCount(c.accountId)).toBe(0);
  });

  it('an unknown action is 404 and a GET on a submit path is 405, both in the art shape', async () => {
    const c = await h.newCustomer({ balance: 1 });
    expectArtError(await post(c.key, `${BASE}/explode`, {}), 404, 'not_found');
    expectArtError(await get(c.key, `${BASE}/imagine`), 405, 'invalid_request_error');
  });

  it('a follow-up: foreign and missing parents are 404 alike, an unfinished parent 400, a finished one pins its channel', async () => {
    const owner = await h.newCustomer({ balance: 5 });
    const other = await h.newCustomer({ balance: 5 });
    const parent = await submitted(owner.key, `${BASE}/imagine`, { prompt: 'x', version: '8.2' });
    const before = await available(other.accountId);
    const foreign = await post(other.key, `${BASE}/upscale`, { task_id: parent, index: 1 });
    const missing = await post(other.key, `${BASE}/upscale`, { task_id: 'task_doesnotexist000000000', index: 1 });
    expectArtError(foreign, 404, 'not_found');
    expectArtError(missing, 404, 'not_found');
    expect(foreign.body.error.message.replace(parent, 'ID')).toBe(missing.body.error.message.replace('task_doesnotexist000000000', 'ID'));
    expect(await available(other.accountId)).toBe(before);
    expectArtError(await get(other.key, `/v1/artgen/${parent}`), 404, 'not_found');

    const ownerBefore = await available(owner.accountId);
    expectArtError(await post(owner.key, `${BASE}/upscale`, { task_id: parent, index: 1 }), 400, 'invalid_request_error');
    expect(await available(owner.accountId)).toBe(ownerBefore);

    await finish(parent);
    const up = await submitted(owner.key, `${BASE}/upscale`, { task_id: parent, index: 3, speed: 'fast' });
    const t = await row(up);
    expect(t.request.pinnedChannelId).toBe(CHANNEL);
    expect(t.request.upstreamBody).toMatchObject({ task_id: `up_${parent}`, index: 3, speed: 'fast' });
    expect(t.request.upstreamPath).toBe('/v1/artgen/generations/upscale');
    expect(t.request.billing[0].keys[0]).toBe('artgen@upscale-v8.2-fast');
    expectArtError(await post(owner.key, `${BASE}/upscale`, { task_id: parent, index: 5 }), 400, 'invalid_request_error');
  });

  it('a finished grid shows U/🔄/V buttons; a customId runs its action; a customId of another task is 400', async () => {
    const c = await h.newCustomer({ balance: 5 });
    const parent = await submitted(c.key, `${BASE}/imagine`, { prompt: 'x' });
    await finish(parent);
    const view = await get(c.key, `/v1/artgen/${parent}`);
    expect(view.body).toMatchObject({ status: 'SUCCESS', progress: '100%', grid_image_url: 'http://up/g.png' });
    expect(view.body.image_urls).toHaveLength(4);
    expect(view.body.buttons.map((b: { label: string }) => b.label)).toEqual(['U1', 'U2', 'U3', 'U4', '🔄', 'V1', 'V2', 'V3', 'V4']);
    const u2 = view.body.buttons[1].customId as string;
    expect(u2).toBe(`MJ::JOB::upsample::2::${artgenJobHash(parent)}`);

    const res = await post(c.key, `${BASE}/action`, { task_id: parent, customId: u2 });
    expect(res.body.data.action).toBe('UPSCALE');
    expect((await row(res.body.data.task_id)).request.derived).toMatchObject({ action: 'upscale', index: 2 });

    const other = await submitted(c.key, `${BASE}/imagine`, { prompt: 'y' });
    await finish(other);
    expectArtError(await post(c.key, `${BASE}/action`, { task_id: other, customId: u2 }), 400, 'invalid_request_error');
    expectArtError(await post(c.key, `${BASE}/action`, { task_id: other, customId: 'MJ::nonsense' }), 400, 'invalid_request_error');
  });

  it('refuses pan on a v5.2 parent, remix on a v7 parent and modal on a finished task, nothing charged', async () => {
    const c = await h.newCustomer({ balance: 5 });
    const v52 = await submitted(c.key, `${BASE}/imagine`, { prompt: 'x --v 5.2' });
    await finish(v52);
    const up = await submitted(c.key, `${BASE}/upscale`, { task_id: v52, index: 1 });
    await finish(up, 1);
    const v7 = await submitted(c.key, `${BASE}/imagine`, { prompt: 'x', version: '7' });
    await finish(v7);
    const before = await available(c.accountId);
    const tasks = await taskCount(c.accountId);
    expectArtError(await post(c.key, `${BASE}/pan`, { task_id: up, direction: 'left' }), 400, 'invalid_request_error');
    expectArtError(await post(c.key, `${BASE}/remix-strong`, { task_id: v7, index: 1 }), 400, 'invalid_request_error');
    expectArtError(await post(c.key, `${BASE}/modal`, { task_id: v7, prompt: 'a hat', mask_url: IMG }), 400, 'invalid_request_error');
    expect(await available(c.accountId)).toBe(before);
    expect(await taskCount(c.accountId)).toBe(tasks);
    // the upscale of a v5.2 grid offers no pan arrows
    const labels = (await get(c.key, `/v1/artgen/${up}`)).body.buttons.map((b: { label: string }) => b.label);
    expect(labels).toEqual(['Vary (Strong)', 'Vary (Subtle)', 'Vary (Region)', 'Zoom Out 2x', 'Zoom Out 1.5x']);
  });

  it('modal continues an inpaint task in MODAL on its channel and upstream id', async () => {
    const c = await h.newCustomer({ balance: 5 });
    const parent = await submitted(c.key, `${BASE}/imagine`, { prompt: 'x' });
    await finish(parent);
    const inpaint = await submitted(c.key, `${BASE}/inpaint`, { task_id: parent, index: 1 });
    await h.db.dataSource.query(
      `UPDATE tasks SET status = 'processing', channel_id = $2, upstream_task_id = 'up_inp', native = '{"status":"MODAL"}' WHERE id = $1`,
      [inpaint, CHANNEL],
    );
    await new TaskViewStore(h.redis, h.prefix).write(await row(inpaint));
    expect((await get(c.key, `/v1/artgen/${inpaint}`)).body).toMatchObject({ action: 'INPAINT', status: 'MODAL', buttons: [] });
    const modal = await submitted(c.key, `${BASE}/modal`, { task_id: inpaint, prompt: 'a red hat', mask_url: IMG });
    const t = await row(modal);
    expect(t.request.upstreamBody).toMatchObject({ task_id: 'up_inp', prompt: 'a red hat', mask_url: IMG });
    expect(t.request.pinnedChannelId).toBe(CHANNEL);
  });

  it('describe waits for the task and answers with its text in prompt and description', async () => {
    const c = await h.newCustomer({ balance: 5 });
    const pending = post(c.key, `${BASE}/describe`, { image_urls: [IMG] }).then((r) => r);
    // play the worker: once the task exists, finish it with the upstream's text and write its view
    const id = await waitFor(
      async () => {
        const rows = await h.db.dataSource.query(`SELECT id FROM tasks WHERE account_id = $1`, [c.accountId]);
        return rows[0]?.id as string | undefined;
      },
      { timeoutMs: 10_000 },
    );
    const tasks = new TaskRepository(h.db.dataSource);
    await tasks.markSubmitted(id, CHANNEL, 'up_d');
    const text = '1️⃣ a cat\n\n2️⃣ a dog\n\n3️⃣ a fox\n\n4️⃣ an owl';
    const done = await tasks.complete(id, { text }, { native: { status: 'SUCCESS', description: text, prompts: ['a cat', 'a dog', 'a fox', 'an owl'] } });
    await new TaskViewStore(h.redis, h.prefix).write(done!);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      code: 200,
      data: { task_id: id, action: 'DESCRIBE', status: 'SUCCESS', prompt: text, description: text, prompts: ['a cat', 'a dog', 'a fox', 'an owl'] },
    });
    expect((await get(c.key, `/v1/artgen/${id}`)).body).toMatchObject({ status: 'SUCCESS', prompt: text, description: text });
  });
});

describe('describe past its wait bound', () => {
  let short: EdgeHarness;
  beforeAll(async () => {
    short = await startEdgeHarness({ env: { ARTGEN_DESCRIBE_WAIT_MS: '200' } });
  });
  afterAll(async () => {
    await short?.close();
  });

  it('answers the plain acknowledgement when the text is not there in time', async () => {
    const c = await short.newCustomer({ balance: 5 });
    const res = await request(short.baseUrl)
      .post(`${BASE}/describe`)
      .set('Authorization', `Bearer ${c.key}`)
      .send({ image_urls: [IMG] });
    expect(res.body).toEqual({ code: 200, data: { task_id: expect.stringMatching(/^task_/), action: 'DESCRIBE', status: 'SUBMITTED' } });
  });
});
