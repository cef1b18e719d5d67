import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import sharp from 'sharp';
import { freePort, waitFor } from '@gmg/testing';
import { createSimApp } from './app';
import { testModels } from './test-models.test-kit';

const PUBLIC = 'http://sim.test:9090';
const lumen = (prompt = 'a red fox', extra: Record<string, unknown> = {}) => ({ model: 'lumen-2-pro', prompt, resolution: '1MP', size: '16:9', ...extra });

/** A manual clock: tests move time instead of sleeping. */
function manualClock() {
  let t = 1_700_000_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

const taskId = (res: request.Response): string => res.body.data[0].task_id;
const filePath = (url: string) => new URL(url).pathname;

/** Reads the movie duration from the mvhd box of an MP4. */
function mp4DurationSeconds(buf: Buffer): number {
  const i = buf.indexOf('mvhd');
  if (i < 0) throw new Error('no mvhd box');
  const version = buf[i + 4];
  if (version === 1) return Number(buf.readBigUInt64BE(i + 4 + 4 + 16 + 4)) / buf.readUInt32BE(i + 4 + 4 + 16);
  return buf.readUInt32BE(i + 4 + 4 + 8 + 4) / buf.readUInt32BE(i + 4 + 4 + 8);
}

/** supertest body parser that keeps the raw bytes. */
const binary = ((res: NodeJS.ReadableStream, cb: (err: Error | null, body: Buffer) => void) => {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => cb(null, Buffer.concat(chunks)));
}) as unknown as Parameters<request.Test['parse']>[0];

describe('upstream-sim, real time (SIM_TIME_SCALE 0.05)', () => {
  const app = createSimApp({ timeScale: 0.05, publicUrl: PUBLIC, models: testModels });

  it('answers /healthz', async () => {
    const res = await request(app).get('/healthz').expect(200);
    expect(res.body.status).toBe('ok');
  });

  it('runs an image task to completion and serves a PNG of exactly the expected size', async () => {
    const sub = await request(app)
      .post('/v1/images/generations')
      .send(lumen('a fox', { output_format: 'png' }))
      .expect(200);
    expect(sub.body).toEqual({ code: 200, data: [{ status: 'submitted', task_id: expect.stringMatching(/^task_/) }] });
    const id = taskId(sub);
    const first = await request(app).get(`/v1/tasks/${id}`).expect(200);
    // Real time: a loaded machine may answer after the ~150 ms task ended; the state progression itself is
    // asserted with the manual clock below.
    expect(['pending', 'processing', 'completed']).toContain(first.body.data.status);
    const done = await waitFor(
      async () => {
        const r = await request(app).get(`/v1/tasks/${id}`);
        return r.body.data.status === 'completed' ? r.body : undefined;
      },
      { timeoutMs: 5000, what: 'image task completed' },
    );
    expect(done).toMatchObject({ code: 200, data: { id, status: 'completed', progress: 100, model: 'lumen-2-pro' } });
    expect(done.data.completed).toBeGreaterThanOrEqual(done.data.created);
    const url: string = done.data.result.images[0].url;
    expect(url.startsWith(`${PUBLIC}/files/`)).toBe(true);
    const file = await request(app).get(filePath(url)).buffer(true).parse(binary).expect(200);
    expect(file.headers['content-type']).toBe('image/png');
    const meta = await sharp(file.body as Buffer).metadata();
    expect({ w: meta.width, h: meta.height, f: meta.format }).toEqual({ w: 1344, h: 752, f: 'png' });
  });

  it.each([
    ['jpeg', {}, 'image/jpeg', 1024, 1024, { size: '1:1' }],
    ['webp', { output_format: 'webp' }, 'image/webp', 1152, 864, { size: '4:3' }],
  ])('serves %s results in the requested format and size', async (fmt, extra, ctype, w, h, size) => {
    const sub = await request(app)
      .post('/v1/images/generations')
      .send(lumen('x', { ...extra, ...size }))
      .expect(200);
    const done = await waitFor(
      async () => {
        const r = await request(app).get(`/v1/tasks/${taskId(sub)}`);
        return r.body.data.status === 'completed' ? r.body : undefined;
      },
      { timeoutMs: 5000 },
    );
    const file = await request(app).get(filePath(done.data.result.images[0].url)).buffer(true).parse(binary).expect(200);
    expect(file.headers['content-type']).toBe(ctype);
    const meta = await sharp(file.body as Buffer).metadata();
    expect({ w: meta.width, h: meta.height, f: meta.format }).toEqual({ w, h, f: fmt });
  });

  it('serves a real H.264 MP4 whose duration matches the request', async () => {
    const sub = await request(app).post('/v1/videos/generations').send({ model: 'test-video', prompt: 'waves', duration: 3 }).expect(200);
    const done = await waitFor(
      async () => {
        const r = await request(app).get(`/v1/tasks/${taskId(sub)}`);
        return r.body.data.status === 'completed' ? r.body : undefined;
      },
      { timeoutMs: 10_000, what: 'video task completed' },
    );
    const v = done.data.result.videos[0];
    expect(Array.isArray(v.url)).toBe(true);
    expect(v.expires_at - done.data.completed).toBe(86_400);
    const file = await request(app).get(filePath(v.url[0])).buffer(true).parse(binary).expect(200);
    expect(file.headers['content-type']).toBe('video/mp4');
    const buf = file.body as Buffer;
    expect(buf.subarray(4, 8).toString()).toBe('ftyp');
    expect(buf.includes('avc1')).toBe(true);
    expect(mp4DurationSeconds(buf)).toBeCloseTo(3, 1);
    expect(v.duration).toBe(3);
  }, 30_000);

  it('[sim:partial] delivers half the images asked and a video half as long, its duration reported and real', async () => {
    const img = await request(app).post('/v1/images/generations').send({ model: 'pict-image-2', prompt: 'cats [sim:partial]', n: 4 }).expect(200);
    const vid = await request(app).post('/v1/videos/generations').send({ model: 'test-video', prompt: 'waves [sim:partial]', duration: 4 }).expect(200);
    const doneOf = (id: string) =>
      waitFor(
        async () => {
          const r = await request(app).get(`/v1/tasks/${id}`);
          return r.body.data.status === 'completed' ? r.body.data : undefined;
        },
        { timeoutMs: 10_000, what: `${id} completed` },
      );
    const [i, v] = [await doneOf(taskId(img)), await doneOf(taskId(vid))];
    expect(i.result.images).toHaveLength(2);
    expect(v.result.videos[0].duration).toBe(2);
    const file = await request(app).get(filePath(v.result.videos[0].url[0])).buffer(true).parse(binary).expect(200);
    expect(mp4DurationSeconds(file.body as Buffer)).toBeCloseTo(2, 1);
  }, 30_000);

  describe('lumen-2 size: auto measures the first reference (issue 11.7)', () => {
    let server: http.Server;
    let base = '';
    beforeAll(async () => {
      // stands in for the gateway's own upload links (a path like theirs, on loopback)
      const wide = await sharp({ create: { width: 1920, height: 1080, channels: 3, background: '#336699' } })
        .png()
        .toBuffer();
      const tall = await sharp({ create: { width: 900, height: 1600, channels: 3, background: '#996633' } })
        .jpeg()
        .toBuffer();
      server = http.createServer((req, res) => {
        const body = req.url === '/v1/uploads/img_wide.png' ? wide : req.url === '/v1/uploads/img_tall.jpg' ? tall : undefined;
        if (!body) return void res.writeHead(404).end();
        res.writeHead(200, { 'content-type': req.url!.endsWith('.png') ? 'image/png' : 'image/jpeg' }).end(body);
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      await new Promise<void>((r) => server.close(() => r()));
    });

    const renderedSize = async (body: Record<string, unknown>) => {
      const sub = await request(app).post('/v1/images/generations').send(body).expect(200);
      const done = await waitFor(
        async () => {
          const r = await request(app).get(`/v1/tasks/${taskId(sub)}`);
          return r.body.data.status === 'completed' ? r.body.data : undefined;
        },
        { timeoutMs: 10_000, what: 'auto-size task completed' },
      );
      const file = await request(app).get(filePath(done.result.images[0].url)).buffer(true).parse(binary).expect(200);
      const meta = await sharp(file.body as Buffer).metadata();
      return [meta.width, meta.height];
    };

    it.each([
      ['img_wide.png', '2MP', [1920, 1072]],
      ['img_tall.jpg', '1MP', [752, 1344]],
      ['img_wide.png', '4MP', [2720, 1536]],
    ])('follows %s at %s: renders %p', async (file, resolution, size) => {
      expect(await renderedSize(lumen('auto', { size: 'auto', resolution, image_urls: [`${base}/v1/uploads/${file}`] }))).toEqual(size);
    });

    it('answers 400 naming image_urls.0 when the first reference cannot be fetched', async () => {
      const res = await request(app)
        .post('/v1/images/generations')
        .send(lumen('x', { size: 'auto', image_urls: [`http://127.0.0.1:${await freePort()}/gone.png`] }))
        .expect(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', message: expect.stringContaining('image_urls.0') });
    });
  });

  it('answers 404 not_found_error for an unknown task id', async () => {
    const res = await request(app).get('/v1/tasks/task_doesnotexist').expect(404);
    expect(res.body).toEqual({ error: { code: 404, message: 'task not found', type: 'not_found_error' } });
  });

  it('answers a contract violation in the spec error shape', async () => {
    const res = await request(app)
      .post('/v1/images/generations')
      .send(lumen('x', { steps: 5 }))
      .expect(400);
    expect(res.body.error).toMatchObject({ code: 400, type: 'invalid_request_error', message: expect.stringContaining('steps') });
  });

  it('refuses an unknown model, a model on the wrong endpoint, and invalid JSON with 400', async () => {
    await request(app).post('/v1/images/generations').send({ model: 'nope', prompt: 'x' }).expect(400);
    const wrong = await request(app).post('/v1/videos/generations').send(lumen()).expect(400);
    expect(wrong.body.error.message).toContain('/v1/images/generations');
    const bad = await request(app).post('/v1/images/generations').set('Content-Type', 'application/json').send('{bad').expect(400);
    expect(bad.body.error.type).toBe('invalid_request_error');
  });

  it('answers acknowledgement shape B with HTTP 202 for a shape-B model', async () => {
    const res = await request(app).post('/v1/images/generations').send({ model: 'test-image-b', prompt: 'x' }).expect(202);
    expect(res.body).toEqual({
      code: 202,
      request_id: expect.any(String),
      data: {
        id: expect.stringMatching(/^task_/),
        object: 'generation.task',
        type: 'image',
        status: 'pending',
        progress: 0,
        poll_url: `/v1/tasks/${res.body.data.id}`,
      },
    });
  });
});

describe('upstream-sim, manual clock', () => {
  const clock = manualClock();
  const app = createSimApp({ timeScale: 1, publicUrl: PUBLIC, now: clock.now, models: testModels });
  const submit = async (prompt: string, key?: string) => {
    const r = request(app).post('/v1/images/generations');
    if (key) r.set('Idempotency-Key', key);
    return r.send(lumen(prompt));
  };
  const poll = async (id: string) => (await request(app).get(`/v1/tasks/${id}`).expect(200)).body.data;

  it('moves pending → processing with rising progress → completed', async () => {
    const id = taskId(await submit('plain'));
    expect(await poll(id)).toMatchObject({ status: 'pending', progress: 0 });
    clock.advance(1000);
    const a = await poll(id);
    clock.advance(1000);
    const b = await poll(id);
    expect(a.status).toBe('processing');
    expect(b.status).toBe('processing');
    expect(b.progress).toBeGreaterThan(a.progress);
    clock.advance(1500);
    expect(await poll(id)).toMatchObject({ status: 'completed', progress: 100 });
  });

  it('[sim:fail] ends failed with the simulated message and no type', async () => {
    const id = taskId(await submit('x [sim:fail]'));
    clock.advance(60_000);
    const t = await poll(id);
    expect(t.status).toBe('failed');
    expect(t.error).toEqual({ code: 'task_failed', message: 'Generation failed (simulated)' });
    expect(t.cost).toBe(0);
    expect(t.result).toBeUndefined();
  });

  it('[sim:moderation] ends failed as content moderation', async () => {
    const id = taskId(await submit('[sim:moderation] x'));
    clock.advance(60_000);
    expect((await poll(id)).error).toEqual({ code: 'task_failed', message: 'Banned prompt detected', type: 'moderation' });
  });

  it('[sim:never] stays processing', async () => {
    const id = taskId(await submit('[sim:never]'));
    clock.advance(3_600_000);
    const t = await poll(id);
    expect(t.status).toBe('processing');
    expect(t.progress).toBeLessThan(100);
  });

  it('[sim:slow] takes ten times longer', async () => {
    const fast = taskId(await submit('quick'));
    const slow = taskId(await submit('[sim:slow]'));
    clock.advance(3500);
    expect((await poll(fast)).status).toBe('completed');
    expect(['pending', 'processing']).toContain((await poll(slow)).status);
    clock.advance(35_000);
    expect((await poll(slow)).status).toBe('completed');
  });

  it('[sim:error503] answers 503 service_unavailable on every submit', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await submit('[sim:error503]', 'k503');
      expect(r.status).toBe(503);
      expect(r.body.error).toMatchObject({ code: 503, type: 'service_unavailable' });
    }
  });

  it('[sim:error503once] fails only the first submit of an idempotency key', async () => {
    expect((await submit('[sim:error503once]', 'k-once')).status).toBe(503);
    const second = await submit('[sim:error503once]', 'k-once');
    expect(second.status).toBe(200);
    const third = await submit('[sim:error503once]', 'k-once');
    expect(taskId(third)).toBe(taskId(second));
    expect((await submit('[sim:error503once]', 'k-other')).status).toBe(503);
  });

  it('returns the same task for the same Idempotency-Key and a new one otherwise', async () => {
    const a = taskId(await submit('idem', 'key-1'));
    const b = taskId(await submit('idem', 'key-1'));
    const c = taskId(await submit('idem', 'key-2'));
    const d = taskId(await submit('idem'));
    expect(b).toBe(a);
    expect(new Set([a, c, d]).size).toBe(3);
  });
});

describe('upstream-sim with SIM_API_KEY', () => {
  const app = createSimApp({ timeScale: 0.05, publicUrl: PUBLIC, apiKey: 'sim-secret', models: testModels });

  it('refuses a missing or wrong key with 401 authentication_error', async () => {
    const none = await request(app).post('/v1/images/generations').send(lumen()).expect(401);
    expect(none.body.error.type).toBe('authentication_error');
    await request(app).get('/v1/tasks/task_x').set('Authorization', 'Bearer nope').expect(401);
  });

  it('accepts the right key', async () => {
    await request(app).post('/v1/images/generations').set('Authorization', 'Bearer sim-secret').send(lumen()).expect(200);
  });

  it('keeps /healthz and file links open', async () => {
    await request(app).get('/healthz').expect(200);
    await request(app).get('/files/task_abc-0-64x64.jpg').expect(200);
  });
});

describe('upstream-sim with the real model registry', () => {
  const app = createSimApp({ timeScale: 0.02, publicUrl: PUBLIC });

  it('answers spark-imagine-image-2.0 with acknowledgement shape B and HTTP 202', async () => {
    const res = await request(app).post('/v1/images/generations').send({ model: 'spark-imagine-image-2.0', prompt: 'a kite', n: 2 }).expect(202);
    expect(res.body).toMatchObject({ code: 202, data: { object: 'generation.task', type: 'image', status: 'pending', progress: 0 } });
    expect(res.body.data.poll_url).toBe(`/v1/tasks/${res.body.data.id}`);
    const done = await waitFor(
      async () => {
        const r = await request(app).get(`/v1/tasks/${res.body.data.id}`);
        return r.body.data.status === 'completed' ? r.body : undefined;
      },
      { timeoutMs: 5000 },
    );
    expect(done.data.result.images).toHaveLength(2);
  });

  it('runs a pixel-v6 video task to an MP4 of the requested duration', async () => {
    const sub = await request(app).post('/v1/videos/generations').send({ model: 'pixel-v6', prompt: 'rain', duration: 2 }).expect(200);
    const done = await waitFor(
      async () => {
        const r = await request(app).get(`/v1/tasks/${taskId(sub)}`);
        return r.body.data.status === 'completed' ? r.body : undefined;
      },
      { timeoutMs: 10_000, what: 'pixel-v6 completed' },
    );
    const file = await request(app).get(filePath(done.data.result.videos[0].url[0])).buffer(true).parse(binary).expect(200);
    expect(mp4DurationSeconds(file.body as Buffer)).toBeCloseTo(2, 1);
  }, 30_000);
});
