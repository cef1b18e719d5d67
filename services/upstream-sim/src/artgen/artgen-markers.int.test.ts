import request from 'supertest';
import { createSimApp } from '../app';
import { PUBLIC, artClient, manualClock } from './artgen.test-kit';

const MINUTE = 60_000;

describe('upstream-sim art suite: timing, markers, idempotency, refusals (manual clock, scale 1)', () => {
  const clock = manualClock();
  const app = createSimApp({ timeScale: 1, publicUrl: PUBLIC, now: clock.now });
  const art = artClient(app);
  const finished = async (prompt: string) => {
    const id = await art.submit('imagine', { prompt });
    clock.advance(MINUTE);
    expect((await art.view(id)).status).toBe('SUCCESS');
    return id;
  };

  it('goes SUBMITTED → IN_PROGRESS with rising progress text → SUCCESS, with submit/start/finish times', async () => {
    const t0 = clock.now();
    const id = await art.submit('imagine', { prompt: 'a slow sunrise' });
    expect(await art.view(id)).toMatchObject({ status: 'SUBMITTED', progress: '0%', submit_time: t0, image_urls: [], buttons: [] });
    const seen: number[] = [];
    for (let i = 0; i < 20; i++) {
      clock.advance(100);
      const v = await art.view(id);
      if (v.status === 'SUCCESS') break;
      if (v.status === 'IN_PROGRESS') {
        expect(v.progress).toMatch(/^\d{1,2}%$/);
        expect(v.start_time).toBeGreaterThan(t0);
        seen.push(Number.parseInt(v.progress, 10));
      }
    }
    expect(seen.length).toBeGreaterThan(3);
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThanOrEqual(seen[i - 1]);
    expect(seen[seen.length - 1]).toBeGreaterThan(seen[0]);
    clock.advance(MINUTE);
    const done = await art.view(id);
    expect(done).toMatchObject({ status: 'SUCCESS', progress: '100%' });
    expect(done.finish_time).toBeGreaterThan(done.start_time);
  });

  it.each([
    ['[sim:fail]', 'Generation failed'],
    ['[sim:moderation]', 'Banned prompt detected'],
  ])('%s ends in FAILURE with fail_reason %s (native and unified views)', async (marker, reason) => {
    const id = await art.submit('imagine', { prompt: `a cat ${marker}` });
    clock.advance(MINUTE);
    const v = await art.view(id);
    expect(v).toMatchObject({ status: 'FAILURE', fail_reason: reason, image_urls: [], buttons: [] });
    const u = await request(app).get(`/v1/tasks/${id}`).expect(200);
    expect(u.body.data).toMatchObject({ status: 'failed', error: { code: 'task_failed', message: reason } });
  });

  it('[sim:never] stays IN_PROGRESS below 100% however long one waits', async () => {
    const id = await art.submit('imagine', { prompt: 'forever [sim:never]' });
    clock.advance(24 * 60 * MINUTE);
    const v = await art.view(id);
    expect(v.status).toBe('IN_PROGRESS');
    expect(Number.parseInt(v.progress, 10)).toBeLessThan(100);
  });

  it('[sim:error503] answers 503 in the art shape; [sim:error503once] only the first time per Idempotency-Key', async () => {
    const res = await art.post('imagine', { prompt: 'x [sim:error503]' }).expect(503);
    expect(res.body).toEqual({ error: { type: 'service_unavailable', message: expect.any(String) } });
    await art.post('imagine', { prompt: 'x [sim:error503once]' }, 'k-once').expect(503);
    await art.post('imagine', { prompt: 'x [sim:error503once]' }, 'k-once').expect(200);
  });

  it('a follow-up without a prompt inherits its parent markers; one with a prompt uses its own', async () => {
    await art.post('imagine', { prompt: 'flaky [sim:error503once]' }, 'parent-key').expect(503);
    const parent = await art.submit('imagine', { prompt: 'flaky [sim:error503once]' }, 'parent-key');
    clock.advance(MINUTE);
    await art.post('upscale', { task_id: parent, index: 1 }, 'child-key').expect(503);
    const child = await art.submit('upscale', { task_id: parent, index: 1 }, 'child-key');
    const slowParent = await finished('big [sim:slow]');
    const slowChild = await art.submit('variation', { task_id: slowParent, index: 1 });
    const ownPrompt = await art.submit('remix-strong', { task_id: slowParent, index: 1, prompt: 'fresh' });
    clock.advance(5_000); // far beyond a normal 3 s grid, well within ten times that
    expect((await art.view(slowChild)).status).toBe('IN_PROGRESS');
    expect((await art.view(ownPrompt)).status).toBe('SUCCESS');
    expect((await art.view(child)).status).toBe('SUCCESS');
  });

  it('replays the first answer for a repeated Idempotency-Key and creates nothing new', async () => {
    const first = await art.post('imagine', { prompt: 'once' }, 'idem-1').expect(200);
    const again = await art.post('imagine', { prompt: 'something else entirely' }, 'idem-1').expect(200);
    expect(again.body).toEqual(first.body);
    const parent = await finished('p');
    const up1 = await art.post('upscale', { task_id: parent, index: 1 }, 'idem-2').expect(200);
    const up2 = await art.post('upscale', { task_id: parent, index: 4 }, 'idem-2').expect(200);
    expect(up2.body).toEqual(up1.body);
  });

  it('refuses bad follow-ups and inputs in the art error shape', async () => {
    const parent = await finished('a parent');
    const running = await art.submit('imagine', { prompt: 'still running' });
    const cases: Array<[string, Record<string, unknown>, number, string, RegExp]> = [
      ['upscale', { task_id: 'art_nope', index: 1 }, 404, 'not_found', /art_nope/],
      ['upscale', { index: 1 }, 400, 'invalid_request_error', /task_id/],
      ['upscale', { task_id: running, index: 1 }, 400, 'invalid_request_error', /SUBMITTED|IN_PROGRESS/],
      ['upscale', { task_id: parent, index: 5 }, 400, 'invalid_request_error', /index/],
      ['pan', { task_id: parent, direction: 'sideways' }, 400, 'invalid_request_error', /direction/],
      ['zoom', { task_id: parent, zoom_ratio: 3 }, 400, 'invalid_request_error', /zoom_ratio/],
      ['blend', { image_urls: ['https://x.test/a.png'] }, 400, 'invalid_request_error', /image_urls/],
      ['blend', { image_urls: ['https://x.test/a.png', 'https://x.test/b.png'], dimensions: 'WIDE' }, 400, 'invalid_request_error', /dimensions/],
      ['imagine', {}, 400, 'invalid_request_error', /prompt/],
      ['imagine', { prompt: 'too wide --ar 9:1' }, 400, 'invalid_request_error', /--ar/],
      ['video', { image_urls: ['https://x.test/a.png'], batch_size: 5 }, 400, 'invalid_request_error', /batch_size/],
      ['modal', { task_id: parent, prompt: 'x' }, 400, 'invalid_request_error', /not MODAL/],
      ['modal', { task_id: 'art_nope', prompt: 'x' }, 404, 'not_found', /art_nope/],
      ['teleport', { prompt: 'x' }, 404, 'not_found', /teleport/],
    ];
    for (const [action, body, status, type, message] of cases) {
      const res = await art.post(action, body).expect(status);
      expect(res.body).toEqual({ error: { type, message: expect.stringMatching(message) } });
    }
    const json = await request(app).post('/v1/artgen/generations/imagine').set('Content-Type', 'application/json').send('{bad').expect(400);
    expect(json.body).toEqual({ error: { type: 'invalid_request_error', message: expect.any(String) } });
    const view = await request(app).get('/v1/artgen/art_nope').expect(404);
    expect(view.body).toEqual({ error: { type: 'not_found', message: expect.any(String) } });
  });
});

describe('upstream-sim art suite behind SIM_API_KEY', () => {
  const app = createSimApp({ timeScale: 0.05, publicUrl: PUBLIC, apiKey: 'sim-secret' });

  it('answers 401 authentication_error in the art shape without the key, and serves with it', async () => {
    const res = await request(app).post('/v1/artgen/generations/imagine').send({ prompt: 'x' }).expect(401);
    expect(res.body).toEqual({ error: { type: 'authentication_error', message: expect.any(String) } });
    const ok = await request(app).post('/v1/artgen/generations/imagine').set('Authorization', 'Bearer sim-secret').send({ prompt: 'x' }).expect(200);
    const id = ok.body.data.task_id;
    await request(app).get(`/v1/artgen/${id}`).expect(401);
    await request(app).get(`/v1/tasks/${id}`).expect(401);
    await request(app).get(`/v1/artgen/${id}`).set('Authorization', 'Bearer sim-secret').expect(200);
  });
});
