import request from 'supertest';
import { resolveModel } from '@gmg/contracts';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/** Submissions of models beyond lumen: ack shape B with response versions, 422 conflicts, spec-specific types, video. */
let h: EdgeHarness;
let key: string;
let accountId: string;
beforeAll(async () => {
  h = await startEdgeHarness();
  ({ key, accountId } = await h.newCustomer({ balance: 100 }));
});
afterAll(async () => {
  await h?.close();
});

const U = 'https://cdn.example.com/ref.png';
const post = (path: string, body: Record<string, unknown>) => request(h.baseUrl).post(path).set('Authorization', `Bearer ${key}`).send(body);
const tasksOf = async () => Number((await h.db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [accountId]))[0].n);

describe('spark-imagine-image-2.0 (ack shape B)', () => {
  const spark = { model: 'spark-imagine-image-2.0', prompt: 'a paper boat' };

  it('answers 202 with shape B, the default response version echoed, and queues the task', async () => {
    const res = await post('/v1/images/generations', spark);
    expect(res.status).toBe(202);
    expect(res.headers['x-service-response-version']).toBe('2026-07-27');
    // written directly (http/send-json.ts): the headers res.json would set, and those set before (X-Request-Id)
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.text));
    expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
    expect(res.body).toEqual({
      code: 202,
      request_id: res.headers['x-request-id'],
      data: {
        id: expect.stringMatching(/^task_/),
        object: 'generation.task',
        type: 'image',
        status: 'pending',
        progress: 0,
        poll_url: `/v1/tasks/${res.body.data.id}`,
      },
    });
    expect((await h.queue('image').getJob(res.body.data.id))?.id).toBe(res.body.data.id);
    const poll = await request(h.baseUrl).get(res.body.data.poll_url).set('Authorization', `Bearer ${key}`);
    expect(poll.status).toBe(200);
    expect(poll.body.data.id).toBe(res.body.data.id);
  });

  it('echoes the X-Service-Response-Version the client sent', async () => {
    const res = await post('/v1/images/generations', spark).set('X-Service-Response-Version', '2026-07-27');
    expect(res.status).toBe(202);
    expect(res.headers['x-service-response-version']).toBe('2026-07-27');
  });

  it('rejects a response version that is not a date with 400 and creates no task', async () => {
    const before = await tasksOf();
    const res = await post('/v1/images/generations', spark).set('X-Service-Response-Version', 'latest');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 400, type: 'invalid_request_error', message: expect.stringContaining('X-Service-Response-Version') });
    expect(await tasksOf()).toBe(before);
  });

  it('rejects quality together with image_urls (text-to-image only) with 400 naming quality', async () => {
    const res = await post('/v1/images/generations', { ...spark, quality: 'low', image_urls: [U] });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('quality');
  });
});

describe('video submissions', () => {
  it('accepts pixel-v6 text-to-video with ack shape A into the video queue', async () => {
    const res = await post('/v1/videos/generations', { model: 'pixel-v6', prompt: 'waves at dusk' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ code: 200, data: [{ status: 'submitted', task_id: expect.stringMatching(/^task_/) }] });
    const id = res.body.data[0].task_id;
    expect((await h.queue('video').getJob(id))?.data).toMatchObject({ taskId: id, submitAttempts: 0 });
    expect(await h.queue('image').getJob(id)).toBeUndefined();
  });

  it('answers Omni-Flash-Ext duration 5 with 400 invalid_duration (spec 7)', async () => {
    const res = await post('/v1/videos/generations', { model: 'Omni-Flash-Ext', prompt: 'x', duration: 5 });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 400, type: 'invalid_duration', message: expect.stringContaining('duration') });
  });

  it('answers reel-v4 image-to-video plus multimodal fields with 422 invalid_request_error and no task', async () => {
    if (!resolveModel('reel-v4-fast')) throw new Error('reel-v4-fast not registered');
    const before = await tasksOf();
    const res = await post('/v1/videos/generations', { model: 'reel-v4-fast', prompt: 'x', image_urls: [U], reference_image_urls: [U] });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error: { code: 422, type: 'invalid_request_error', message: expect.stringContaining('image_urls') } });
    expect(await tasksOf()).toBe(before);
  });

  it('accepts an alias (spark-imagine-1.5-video-ext) and stores both names', async () => {
    const res = await post('/v1/videos/generations', { model: 'spark-imagine-1.5-video-ext', prompt: 'a train' });
    expect(res.status).toBe(200);
    const [row] = await h.db.dataSource.query(`SELECT model, requested_model FROM tasks WHERE id = $1`, [res.body.data[0].task_id]);
    expect(row).toEqual({ model: 'spark-imagine-1.5-video-main', requested_model: 'spark-imagine-1.5-video-ext' });
  });
});
