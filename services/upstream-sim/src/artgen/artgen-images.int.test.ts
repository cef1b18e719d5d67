import { setTimeout as sleep } from 'node:timers/promises';
import request from 'supertest';
import { buildArtgenCustomId } from '@gmg/contracts';
import { createSimApp } from '../app';
import { PUBLIC, artClient, colorDistance, manualClock, mp4DurationSeconds, quadrantMeans, rawPixels } from './artgen.test-kit';

// Expected sizes follow the rules in services/upstream-sim/README.md: a 1:1 tile is 512 x 512, its grid 1024 x 1024,
// an upscale doubles the sides, a pan adds half the other side, a zoom multiplies the sides by zoom_ratio.
describe('upstream-sim art suite: real images (manual clock)', () => {
  const clock = manualClock();
  /** Every wait describe asks for, in ms; the wait itself stays real (a retry must be able to arrive during it). */
  const sleeps: number[] = [];
  const recordedSleep = async (ms: number) => {
    sleeps.push(ms);
    await sleep(ms);
  };
  const app = createSimApp({ timeScale: 0.05, publicUrl: PUBLIC, now: clock.now, sleep: recordedSleep });
  const art = artClient(app);
  /** Submits, lets a minute of simulated time pass (every scaled duration is far shorter), returns the view. */
  const run = async (action: string, body: Record<string, unknown>) => {
    const id = await art.submit(action, body);
    clock.advance(60_000);
    const v = await art.view(id);
    expect(v).toMatchObject({ id, status: 'SUCCESS', progress: '100%' });
    return v;
  };

  it('imagine gives a 2x2 grid PNG of four visibly distinct tiles and the four tile files it is made of', async () => {
    const v = await run('imagine', { prompt: 'a lighthouse at dawn' });
    expect(v.action).toBe('IMAGINE');
    expect(v.grid_image_url).toMatch(new RegExp(`^${PUBLIC}/files/`));
    expect(v.image_urls).toHaveLength(4);
    expect(new Set(v.image_urls).size).toBe(4);
    const grid = await art.file(v.grid_image_url);
    expect(await art.size(v.grid_image_url)).toEqual({ w: 1024, h: 1024, format: 'png' });
    const means = await quadrantMeans(grid);
    for (let i = 0; i < 4; i++) for (let j = i + 1; j < 4; j++) expect(colorDistance(means[i], means[j])).toBeGreaterThan(25);
    for (const [i, url] of (v.image_urls as string[]).entries()) {
      const tile = await art.file(url);
      expect(await art.size(url)).toEqual({ w: 512, h: 512, format: 'png' });
      const region = { left: (i % 2) * 512, top: Math.floor(i / 2) * 512, width: 512, height: 512 };
      expect((await rawPixels(grid, region)).equals(await rawPixels(tile))).toBe(true);
    }
    expect(v.buttons.map((b: { label: string }) => b.label)).toEqual(['U1', 'U2', 'U3', 'U4', '🔄', 'V1', 'V2', 'V3', 'V4']);
  });

  it('shapes the tiles by the prompt --ar flag or the size field', async () => {
    const wide = await run('imagine', { prompt: 'dunes --ar 16:9 --v 7' });
    expect({ w: wide.width, h: wide.height }).toEqual({ w: 680, h: 384 });
    expect(await art.size(wide.image_urls[0])).toEqual({ w: 680, h: 384, format: 'png' });
    const tall = await run('imagine', { prompt: 'a tower', size: '2:3' });
    expect(await art.size(tall.grid_image_url)).toEqual({ w: 832, h: 1248, format: 'png' });
  });

  it('upscale is larger than a tile; two pans left widen the canvas each time; zoom enlarges it by zoom_ratio', async () => {
    const grid = await run('imagine', { prompt: 'a panorama', version: '7' });
    const up = await run('upscale', { task_id: grid.id, index: 2 });
    expect(up.action).toBe('UPSCALE');
    expect(up.image_urls).toHaveLength(1);
    expect(up.grid_image_url).toBeUndefined();
    expect(await art.size(up.image_urls[0])).toEqual({ w: 1024, h: 1024, format: 'png' });
    expect(up.buttons.map((b: { label: string }) => b.label)).toEqual(expect.arrayContaining(['Vary (Region)', 'Zoom Out 2x', '⬅️']));

    const pan1 = await run('pan', { task_id: up.id, direction: 'left' });
    expect(await art.size(pan1.image_urls[0])).toEqual({ w: 1536, h: 1024, format: 'png' });
    const pan2 = await run('pan', { task_id: pan1.id, direction: 'left' });
    expect(await art.size(pan2.image_urls[0])).toEqual({ w: 2048, h: 1024, format: 'png' });
    const panUp = await run('pan', { task_id: up.id, direction: 'up' });
    expect(await art.size(panUp.image_urls[0])).toEqual({ w: 1024, h: 1536, format: 'png' });

    const zoom = await run('zoom', { task_id: up.id });
    expect(zoom.image_urls).toHaveLength(4);
    expect(await art.size(zoom.image_urls[0])).toEqual({ w: 2048, h: 2048, format: 'png' });
    const zoom15 = await run('zoom', { task_id: up.id, zoom_ratio: 1.5 });
    expect(await art.size(zoom15.image_urls[3])).toEqual({ w: 1536, h: 1536, format: 'png' });
  });

  it('offers pan arrows only on pan-capable versions (a follow-up inherits its parent version)', async () => {
    const labels = (v: { buttons: Array<{ label: string }> }) => v.buttons.map((b) => b.label);
    const old = await run('imagine', { prompt: 'an old style --v 5.2' });
    const oldUp = await run('upscale', { task_id: old.id, index: 1 });
    expect(labels(oldUp)).toContain('Zoom Out 2x');
    expect(labels(oldUp)).not.toContain('⬅️');
    const alt = await run('imagine', { prompt: 'anime --niji 6' });
    expect(labels(await run('upscale', { task_id: alt.id, index: 1 }))).toContain('➡️');
  });

  it('variation, high/low variation, reroll, remix and blend give grids; video gives batch_size real MP4s', async () => {
    const grid = await run('imagine', { prompt: 'koi pond --v 8.2' });
    for (const [action, body] of [
      ['variation', { index: 2 }],
      ['high-variation', {}],
      ['low-variation', {}],
      ['reroll', {}],
      ['remix-strong', { index: 1 }],
      ['remix-subtle', { index: 4 }],
    ] as const) {
      const v = await run(action, { task_id: grid.id, ...body });
      expect(v.action).toBe(action.toUpperCase().replace('-', '_'));
      expect(v.image_urls).toHaveLength(4);
      expect(v.grid_image_url).toEqual(expect.any(String));
      expect(v.prompt).toBe('koi pond --v 8.2');
    }
    const blend = await run('blend', { image_urls: ['https://x.test/a.png', 'https://x.test/b.png'], dimensions: 'LANDSCAPE' });
    expect(await art.size(blend.grid_image_url)).toEqual({ w: 1248, h: 832, format: 'png' });

    const video = await run('video', { prompt: 'waves', image_urls: ['https://x.test/a.png'], motion: 'high', batch_size: 3 });
    expect(video.video_urls).toHaveLength(3);
    expect(video.image_urls).toHaveLength(3);
    for (const url of video.video_urls as string[]) {
      const mp4 = await art.file(url);
      expect(mp4.subarray(4, 8).toString()).toBe('ftyp');
      expect(mp4DurationSeconds(mp4)).toBeCloseTo(5, 1);
    }
  }, 60_000);

  it('describe answers within the request with four prompts, after 1-3 s times the scale', async () => {
    const before = sleeps.length;
    const res = await art.post('describe', { image_urls: ['https://x.test/photo.jpg'] }).expect(200);
    // the answer came after one wait of 1-3 s at the sim's scale 0.05
    const waited = sleeps.slice(before);
    expect(waited).toHaveLength(1);
    expect(waited[0]).toBeGreaterThanOrEqual(1000 * 0.05);
    expect(waited[0]).toBeLessThanOrEqual(3000 * 0.05);
    const d = res.body.data;
    expect(d).toMatchObject({ action: 'DESCRIBE', status: 'SUCCESS' });
    expect(d.prompts).toHaveLength(4);
    expect(new Set(d.prompts).size).toBe(4);
    expect(d.description).toBe(d.prompt);
    expect(d.prompt.split('\n\n')).toEqual((d.prompts as string[]).map((p, i) => `${['1️⃣', '2️⃣', '3️⃣', '4️⃣'][i]} ${p}`));
    const v = await art.view(d.task_id);
    expect(v).toMatchObject({ status: 'SUCCESS', action: 'DESCRIBE', prompt: d.prompt, description: d.prompt, prompts: d.prompts });
    expect(v.finish_time - v.start_time).toBe(waited[0]); // the task's own record of its run is that wait
  });

  it('a describe retried with the same Idempotency-Key while the first still runs gets the same task', async () => {
    const body = { image_urls: ['https://x.test/retried.jpg'] };
    const [a, b] = await Promise.all([art.post('describe', body, 'describe-key').expect(200), art.post('describe', body, 'describe-key').expect(200)]);
    expect(b.body).toEqual(a.body);
    const c = await art.post('describe', body).expect(200);
    expect(c.body.data.task_id).not.toBe(a.body.data.task_id);
  });

  it('inpaint waits in MODAL; modal completes the same task MODAL → IN_PROGRESS → SUCCESS with a grid', async () => {
    const grid = await run('imagine', { prompt: 'a cat' });
    const up = await run('upscale', { task_id: grid.id, index: 1 });
    const ack = await art.post('inpaint', { task_id: up.id }).expect(200);
    expect(ack.body.data).toMatchObject({ action: 'INPAINT', status: 'MODAL' });
    const id = ack.body.data.task_id;
    clock.advance(3_600_000);
    expect(await art.view(id)).toMatchObject({ status: 'MODAL', image_urls: [], buttons: [] });
    const modal = await art.post('modal', { task_id: id, prompt: 'a cat with a hat', mask_url: 'https://x.test/mask.png' }).expect(200);
    expect(modal.body.data).toMatchObject({ task_id: id, action: 'MODAL' });
    expect((await art.view(id)).status).toBe('IN_PROGRESS');
    clock.advance(60_000);
    const done = await art.view(id);
    expect(done).toMatchObject({ id, status: 'SUCCESS', prompt: 'a cat with a hat' });
    expect(done.image_urls).toHaveLength(4);
    const again = await art.post('modal', { task_id: id, prompt: 'x' }).expect(400);
    expect(again.body).toEqual({ error: { type: 'invalid_request_error', message: expect.stringContaining('not MODAL') } });
  });

  it('/action with a customId of the shared grammar runs the action it names', async () => {
    const grid = await run('imagine', { prompt: 'a bridge' });
    const hash = 'anyhash';
    const upRes = await art.post('action', { task_id: grid.id, customId: buildArtgenCustomId({ action: 'upscale', index: 3, hash }) }).expect(200);
    expect(upRes.body.data.action).toBe('UPSCALE');
    clock.advance(60_000);
    const up = await art.view(upRes.body.data.task_id);
    expect(await art.size(up.image_urls[0])).toEqual({ w: 1024, h: 1024, format: 'png' });
    const panRes = await art.post('action', { task_id: up.id, customId: buildArtgenCustomId({ action: 'pan', direction: 'right', hash }) }).expect(200);
    expect(panRes.body.data.action).toBe('PAN');
    clock.advance(60_000);
    expect(await art.size((await art.view(panRes.body.data.task_id)).image_urls[0])).toEqual({ w: 1536, h: 1024, format: 'png' });
    const zoomRes = await art.post('action', { task_id: up.id, customId: buildArtgenCustomId({ action: 'zoom', zoom_ratio: 1.5, hash }) }).expect(200);
    clock.advance(60_000);
    expect((await art.view(zoomRes.body.data.task_id)).width).toBe(1536);
    // The sim's own buttons round-trip too.
    const v2 = up.buttons.find((b: { label: string }) => b.label === 'Vary (Strong)');
    const vary = await art.post('action', { task_id: up.id, customId: v2.customId }).expect(200);
    expect(vary.body.data.action).toBe('HIGH_VARIATION');
    const bad = await art.post('action', { task_id: up.id, customId: 'MJ::JOB::nope::1::x' }).expect(400);
    expect(bad.body).toEqual({ error: { type: 'invalid_request_error', message: expect.stringContaining('customId') } });
  });

  it('shows an art task as a unified task at /v1/tasks/<id> with result.images', async () => {
    const grid = await run('imagine', { prompt: 'a field' });
    const res = await request(app).get(`/v1/tasks/${grid.id}`).expect(200);
    expect(res.body).toMatchObject({ code: 200, data: { id: grid.id, model: 'artgen', status: 'completed', progress: 100 } });
    expect(res.body.data.result.images.map((i: { url: string }) => i.url)).toEqual(grid.image_urls);
  });
});
