import request from 'supertest';
import { createSimApp } from '../app';

/** A manual clock: tests move time instead of sleeping. */
function manualClock() {
  let t = 1_700_000_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('upstream-sim avatar review (manual clock, real model registry)', () => {
  const clock = manualClock();
  const app = createSimApp({ timeScale: 1, publicUrl: 'http://sim.test:9090', now: clock.now });
  const poll = async (id: string) => (await request(app).get(`/v1/tasks/${id}`).expect(200)).body.data;

  it('acknowledges shape C, reviews each asset, rejects only the [sim:moderation] one, and completes when all are decided', async () => {
    const sub = await request(app)
      .post('/v1/motion2/private-avatar')
      .send({
        assets: [
          { url: 'https://cdn.example.com/a.png', name: 'a' },
          { url: 'https://cdn.example.com/b.png', name: 'b [sim:moderation]' },
        ],
      })
      .expect(200);
    expect(sub.body).toEqual({
      code: 200,
      data: { id: expect.stringMatching(/^task_/), object: 'motion.avatar.asset.task', status: 'processing', progress: 0, model: 'motion-2.0-avatar' },
    });
    const id = sub.body.data.id;
    expect((await poll(id)).status).not.toBe('completed');
    clock.advance(1000);
    expect((await poll(id)).status).toBe('processing');
    clock.advance(5000);
    const done = await poll(id);
    expect(done.status).toBe('completed');
    expect(done.result.assets.map((a: any) => a.status)).toEqual(['Active', 'Rejected']);
    expect(done.result.assets[1].reason).toMatch(/moderation/i);
    expect(done.result.usable_assets).toEqual([done.result.assets[0]]);

    const video = (asset: string) =>
      request(app)
        .post('/v1/videos/generations')
        .send({ model: 'motion-2.0', prompt: 'p', asset_urls: [asset] });
    expect((await video(done.result.assets[0].asset_url)).status).toBe(200);
    const refused = await video(done.result.assets[1].asset_url);
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('asset_urls.0');
    expect((await video('asset://asset_notfromhere')).status).toBe(400);
  });

  it('takes the url + name shorthand, replays an Idempotency-Key, and refuses bad bodies with 400', async () => {
    const body = { url: 'https://cdn.example.com/c.png', name: 'c', asset_type: 'Video' };
    const a = await request(app).post('/v1/motion2/private-avatar').set('Idempotency-Key', 'k1').send(body).expect(200);
    const b = await request(app).post('/v1/motion2/private-avatar').set('Idempotency-Key', 'k1').send(body).expect(200);
    expect(b.body.data.id).toBe(a.body.data.id);
    for (const bad of [
      { assets: [] },
      { assets: Array.from({ length: 21 }, (_, i) => ({ url: `https://x.example.com/${i}`, name: `${i}` })) },
      { assets: [{ url: 'https://x.example.com/a' }] },
      { assets: [{ url: 'https://x.example.com/a', name: 'a' }], url: 'https://x.example.com/b' },
      { url: 'https://x.example.com/a', name: 'a', asset_type: 'Gif' },
    ]) {
      const r = await request(app).post('/v1/motion2/private-avatar').send(bad);
      expect({ bad, status: r.status }).toEqual({ bad, status: 400 });
    }
  });

  it('[sim:fail] in any name fails the whole batch', async () => {
    const sub = await request(app)
      .post('/v1/motion2/private-avatar')
      .send({ assets: [{ url: 'https://x.example.com/a', name: 'a [sim:fail]' }] })
      .expect(200);
    clock.advance(60_000);
    const t = await poll(sub.body.data.id);
    expect(t.status).toBe('failed');
    expect(t.error.code).toBe('task_failed');
  });
});
