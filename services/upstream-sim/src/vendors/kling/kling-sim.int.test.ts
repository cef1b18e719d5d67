import { createHmac } from 'node:crypto';
import request from 'supertest';
import { createSimApp } from '../../app';

/** The kling mode refuses what Kling refuses (its 401 token codes, 400 code 1201, 404); a manual clock drives it. */
describe('upstream-sim kling mode (strict)', () => {
  let t = 1_700_000_000_000;
  const app = createSimApp({ timeScale: 1, publicUrl: 'http://sim.test:9090', apiKey: 'ak-1|sk-1', now: () => t });
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const jwt = (claims: Record<string, unknown>, secret = 'sk-1', alg = 'HS256') => {
    const signed = `${b64({ alg, typ: 'JWT' })}.${b64(claims)}`;
    return `${signed}.${createHmac('sha256', secret).update(signed).digest('base64url')}`;
  };
  const nowS = () => Math.floor(t / 1000);
  const good = () => jwt({ iss: 'ak-1', exp: nowS() + 1800, nbf: nowS() - 5 });
  const post = (body: unknown, token: string | null = good()) => {
    const r = request(app).post('/kling/v1/videos/omni-video');
    return (token ? r.set('authorization', `Bearer ${token}`) : r).send(body as object);
  };
  const codeOf = async (body: unknown, token?: string | null) => ((await post(body, token)).body as { code: number }).code;
  const problem = async (body: unknown) => {
    const res = await post(body).expect(400);
    return `${res.body.code as number} ${res.body.message as string}`;
  };

  it('checks the JWT: missing 1001, garbage 1002, wrong secret or issuer 1000, early 1003, expired 1004', async () => {
    const body = { prompt: 'x', aspect_ratio: '16:9' };
    expect(await codeOf(body, null)).toBe(1001);
    expect(await codeOf(body, 'not-a-jwt')).toBe(1002);
    expect(await codeOf(body, jwt({ iss: 'ak-1', exp: nowS() + 60, nbf: nowS() - 5 }, 'sk-2'))).toBe(1000);
    expect(await codeOf(body, jwt({ iss: 'ak-9', exp: nowS() + 60, nbf: nowS() - 5 }))).toBe(1000);
    expect(await codeOf(body, jwt({ iss: 'ak-1', exp: nowS() + 60, nbf: nowS() - 5 }, 'sk-1', 'none'))).toBe(1002);
    expect(await codeOf(body, jwt({ iss: 'ak-1', exp: nowS() + 60, nbf: nowS() + 30 }))).toBe(1003);
    expect(await codeOf(body, jwt({ iss: 'ak-1', exp: nowS() - 1, nbf: nowS() - 60 }))).toBe(1004);
    expect((await post(body, null)).status).toBe(401);
  });

  it('answers 400 code 1201 naming the bad field', async () => {
    expect(await problem({ aspect_ratio: '16:9' })).toMatch(/^1201 prompt/);
    expect(await problem({ prompt: 'x' })).toMatch(/^1201 aspect_ratio is required/);
    expect(await problem({ prompt: 'x', aspect_ratio: '4:3' })).toMatch(/^1201 aspect_ratio must be/);
    expect(await problem({ prompt: 'x', aspect_ratio: '16:9', duration: 5 })).toMatch(/duration must be a string/);
    expect(await problem({ prompt: 'x', aspect_ratio: '16:9', duration: '7' })).toMatch(/duration must be one of 5, 10/);
    expect(await problem({ prompt: 'x', aspect_ratio: '16:9', model: 'kinetic-video-o1' })).toMatch(/unknown field model/);
    expect(await problem({ prompt: 'x', model_name: 'kling-v9' })).toMatch(/model_name/);
    expect(await problem({ prompt: 'x', image_list: [{ image_url: 'data:image/png;base64,AAAA', type: 'first_frame' }] })).toMatch(/image_url/);
    expect(await problem({ prompt: 'x', aspect_ratio: '1:1', image_list: [{ image_url: 'https://i.example.com/b.png', type: 'end_frame' }] })).toMatch(
      /end_frame needs a first_frame/,
    );
    const base = { video_url: 'https://v.example.com/a.mp4', refer_type: 'base' };
    expect(await problem({ prompt: 'x', video_list: [base], duration: '5' })).toMatch(/base video/);
    expect(await problem({ prompt: 'x', video_list: [base], image_list: [{ image_url: 'https://i.example.com/a.png', type: 'first_frame' }] })).toMatch(
      /base video takes no first_frame/,
    );
    expect((await post([1]).expect(400)).body.code).toBe(1200);
  });

  it('runs a task submitted → processing → succeed on the clock; an unknown task is 404 code 1203', async () => {
    const sub = (await post({ prompt: 'ok', mode: 'pro', aspect_ratio: '9:16', duration: '10' }).expect(200)).body;
    expect(sub).toMatchObject({ code: 0, data: { task_id: expect.stringMatching(/^task_/), task_status: 'submitted' } });
    const poll = async () =>
      (await request(app).get(`/kling/v1/videos/omni-video/${sub.data.task_id}`).set('authorization', `Bearer ${good()}`).expect(200)).body;
    expect((await poll()).data.task_status).toBe('submitted');
    t += 4000;
    expect((await poll()).data.task_status).toBe('processing');
    t += 60_000;
    const done = (await poll()).data;
    expect(done).toMatchObject({
      task_status: 'succeed',
      task_result: { videos: [{ url: expect.stringMatching(/^http:\/\/sim\.test:9090\/vendor-files\//), duration: '10' }] },
    });
    const gone = await request(app).get('/kling/v1/videos/omni-video/task_nope').set('authorization', `Bearer ${good()}`).expect(404);
    expect(gone.body.code).toBe(1203);
    expect((await request(app).get('/kling/v1/videos/text2video/x').set('authorization', `Bearer ${good()}`).expect(404)).body.code).toBe(1202);
  });
});
