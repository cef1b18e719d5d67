import { normalizedRequest } from '@gmg/testing';
import { readImageHeader } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import { createUpstreamAdapters, type ChannelTarget, type UpstreamAdapter, type UpstreamPoll } from '@gmg/upstream';
import { failure, listenVendorSim, type SeenRequest, type VendorSim } from '../vendor-sim.test-kit';

/**
 * The ark adapter against the simulator's ark mode over HTTP (loopback, port 0). Both share one injected clock: a
 * Seedance task ends, and its 24-hour link dies, when the test moves the clock.
 */
const KEY = 'ark-key-0123456789';
const adapter: UpstreamAdapter = createUpstreamAdapters({ timeoutMs: 5000, syncTimeoutMs: 20_000 }).getAdapter('ark')!;
const normalized = normalizedRequest;

type Seen = SeenRequest;

const urlOf = (p: UpstreamPoll | undefined): string => {
  const s = p?.media?.[0]?.source;
  return s && 'url' in s ? s.url : '';
};

describe('ark adapter against upstream-sim /ark', () => {
  let clock = Date.now();
  let sim: VendorSim;
  let ch: ChannelTarget;

  beforeAll(async () => {
    sim = await listenVendorSim('ark', { apiKey: KEY, now: () => clock, timeScale: 0.01, id: 'ark1', name: 'ark-sim' });
    ch = sim.channel;
  });
  afterAll(async () => {
    await sim?.close();
  });

  const seen = (): Promise<Seen[]> => sim.seen();
  const lastPost = async () => (await seen()).filter((r) => r.method === 'POST' && r.path.startsWith('/ark')).at(-1)!;
  const submit = (body: Record<string, unknown>, channel = ch) => adapter.submit(channel, normalized(body), { taskId: `task_${Math.random()}` });
  const poll = (id: string, ms = 0) => {
    clock += ms;
    return adapter.poll(ch, id, { pool: 'video', model: 'motion-1-0-pro-fast' });
  };

  it('posts a Seedance task with Bearer auth: content[] of the prompt and frames, top-level ratio/resolution/duration', async () => {
    const mapped = { ...ch, modelMap: { 'motion-1-0-pro-quality': 'seedance-1-0-pro-250528' }, settings: { headers: { 'x-org': 'acme' } } };
    const { upstreamTaskId, done } = await submit(
      {
        model: 'motion-1-0-pro-quality',
        prompt: 'a heron',
        duration: 6,
        resolution: '720p',
        image_urls: ['https://img.example.com/a.png', 'https://img.example.com/b.png'],
      },
      mapped,
    );
    expect(done).toBeUndefined();
    expect(upstreamTaskId).toMatch(/^cgt-/);
    const post = await lastPost();
    expect(post.path).toBe('/ark/api/v3/contents/generations/tasks');
    expect(post.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(post.headers['x-org']).toBe('acme');
    expect(post.body).toEqual({
      model: 'seedance-1-0-pro-250528',
      content: [
        { type: 'text', text: 'a heron' },
        { type: 'image_url', image_url: { url: 'https://img.example.com/a.png' }, role: 'first_frame' },
        { type: 'image_url', image_url: { url: 'https://img.example.com/b.png' }, role: 'last_frame' },
      ],
      duration: 6,
      resolution: '720p',
      ratio: 'adaptive',
      watermark: false,
    });
  });

  it('polls queued → running → succeeded: media whose link serves the video until Ark’s 24 hours are over', async () => {
    const { upstreamTaskId } = await submit({ model: 'motion-1-0-pro-fast', prompt: 'a fox', aspect_ratio: '9:16', resolution: '720p', duration: 3 });
    expect((await lastPost()).body).toMatchObject({ model: 'seedance-1-0-pro-fast-251015', ratio: '9:16', resolution: '720p', duration: 3 });
    expect(await poll(upstreamTaskId)).toEqual({ status: 'pending', progress: 0 });
    expect(await poll(upstreamTaskId, 40)).toEqual({ status: 'processing', progress: 0 });
    const done = await poll(upstreamTaskId, 60_000);
    expect(done).toMatchObject({ status: 'completed', progress: 100, media: [{ kind: 'video', durationSeconds: 3 }] });
    const url = urlOf(done);
    const file = await fetch(url);
    expect([200, 503]).toContain(file.status); // 503: no video renderer on this platform; the link itself is alive
    clock += 24 * 60 * 60_000;
    expect((await fetch(url)).status).toBe(403);
  });

  it('ends a failed task as failed, an output-moderated one as a moderation failure', async () => {
    const failed = await submit({ model: 'motion-1-0-pro-fast', prompt: 'x [sim:fail]' });
    expect(await poll(failed.upstreamTaskId, 60_000)).toMatchObject({ status: 'failed', error: { type: 'InternalServiceError', moderation: false } });
    const flagged = await submit({ model: 'motion-1-0-pro-fast', prompt: 'x [sim:moderation]' });
    expect(await poll(flagged.upstreamTaskId, 60_000)).toMatchObject({
      status: 'failed',
      error: { type: 'OutputVideoSensitiveContentDetected', moderation: true },
    });
  });

  it('a prompt refused at submit (InputTextSensitiveContentDetected) is a final moderation failure', async () => {
    const e = await failure(submit({ model: 'motion-1-0-pro-fast', prompt: 'x [sim:input-moderation]' }));
    expect({ status: e?.status, kind: e?.kind, retryable: e?.retryable }).toEqual({ status: 400, kind: 'moderation', retryable: false });
  });

  it('answers a 429 as a retry after Retry-After, then the same submit goes through', async () => {
    const body = { model: 'motion-1-0-pro-fast', prompt: `busy ${clock} [sim:429once]` };
    const e = await failure(submit(body));
    expect(e).toBeInstanceOf(UpstreamError);
    expect({ retryable: e?.retryable, kind: e?.kind, status: e?.status, retryAfterMs: e?.retryAfterMs }).toEqual({
      retryable: true,
      kind: 'quota',
      status: 429,
      retryAfterMs: 1000,
    });
    expect((await submit(body)).upstreamTaskId).toMatch(/^cgt-/);
  });

  it('cancels a queued task (then cancelled), and a running one is left to run', async () => {
    const queued = await submit({ model: 'motion-1-0-pro-fast', prompt: 'to cancel' });
    await adapter.cancel!(ch, queued.upstreamTaskId);
    expect((await seen()).at(-1)).toMatchObject({ method: 'DELETE', path: `/ark/api/v3/contents/generations/tasks/${queued.upstreamTaskId}` });
    expect(await poll(queued.upstreamTaskId)).toMatchObject({ status: 'failed', error: { type: 'upstream_error' } });
    const running = await submit({ model: 'motion-1-0-pro-fast', prompt: 'busy [sim:never]' });
    clock += 1000;
    await expect(adapter.cancel!(ch, running.upstreamTaskId)).resolves.toBeUndefined();
    expect((await poll(running.upstreamTaskId)).status).toBe('processing');
  });

  it('Seedream: one synchronous call, done at submit, its 24-hour link serving the jpeg', async () => {
    const out = await adapter.submit(
      ch,
      normalized({ model: 'dream-5-0-pro', prompt: 'a kite', size: '1:1', resolution: '2K', image_urls: ['https://img.example.com/r.png'] }),
      {
        taskId: 'task_img',
      },
    );
    expect((await lastPost()).path).toBe('/ark/api/v3/images/generations');
    expect((await lastPost()).body).toEqual({
      model: 'seedream-4-5-251128',
      prompt: 'a kite',
      image: ['https://img.example.com/r.png'],
      size: '2048x2048',
      sequential_image_generation: 'disabled',
      response_format: 'url',
      watermark: false,
    });
    expect(out.upstreamTaskId).toMatch(/^img_/);
    expect(out.done).toMatchObject({ status: 'completed', media: [{ kind: 'image', width: 2048, height: 2048 }] });
    const file = await fetch(urlOf(out.done));
    expect(readImageHeader(Buffer.from(await file.arrayBuffer()))).toMatchObject({ format: 'jpeg', width: 2048, height: 2048 });
    const moderated = await failure(adapter.submit(ch, normalized({ model: 'dream-5-0-lite', prompt: 'x [sim:moderation]' }), { taskId: 'task_img2' }));
    expect({ kind: moderated?.kind, retryable: moderated?.retryable }).toEqual({ kind: 'moderation', retryable: false });
  });

  it('refuses what Ark cannot honour before any call: nsfw_check, two frames on pro fast, n > 1, a too small Seedream size', () => {
    expect(adapter.check!(ch, normalized({ model: 'motion-1-0-pro-fast', prompt: 'x', nsfw_check: true }))?.field).toBe('nsfw_check');
    const twoFrames = { model: 'motion-1-0-pro-fast', prompt: 'x', image_urls: ['https://a.example/1.png', 'https://a.example/2.png'] };
    expect(adapter.check!(ch, normalized(twoFrames))?.field).toBe('image_urls');
    expect(adapter.check!(ch, normalized({ model: 'dream-5-0-lite', prompt: 'x', n: 2 }))?.field).toBe('n');
    expect(adapter.check!(ch, normalized({ model: 'dream-5-0-pro', prompt: 'x', resolution: '1K' }))?.field).toBe('resolution');
    expect(adapter.check!(ch, normalized({ model: 'dream-5-0-lite', prompt: 'x', resolution: '1K', size: '1:1' }))).toBeUndefined();
  });

  it('a wrong key fails over (channel, key not echoed); an unknown task id is final', async () => {
    const badKey = await failure(submit({ model: 'motion-1-0-pro-fast', prompt: 'x' }, { ...ch, apiKey: 'wrong-key-999' }));
    expect({ status: badKey?.status, retryable: badKey?.retryable, kind: badKey?.kind }).toEqual({ status: 401, retryable: true, kind: 'channel' });
    expect(badKey?.message).not.toContain('wrong-key-999');
    const gone = await failure(poll('cgt-nope'));
    expect({ status: gone?.status, retryable: gone?.retryable }).toEqual({ status: 404, retryable: false });
  });

  it("the simulator accepts each family's translated sample and refuses our untranslated body", async () => {
    const samples: Record<string, unknown>[] = [
      { model: 'motion-1-0-pro-fast', prompt: 's1', duration: 12, aspect_ratio: '1:1', resolution: '1080p', image_urls: ['https://a.example/1.png'] },
      { model: 'motion-1-0-pro-quality', prompt: 's2', duration: 2, aspect_ratio: '16:9', resolution: '720p' },
      { model: 'dream-5-0-pro', prompt: 's3', size: '16:9', resolution: '4K', image_urls: ['https://a.example/1.png'] },
      { model: 'dream-5-0-lite', prompt: 's4', size: '3:4', resolution: '2K' },
    ];
    for (const body of samples) await expect(submit(body)).resolves.toHaveProperty('upstreamTaskId');
    for (const [i, path] of [
      [1, '/api/v3/contents/generations/tasks'],
      [3, '/api/v3/images/generations'],
    ] as const) {
      // our body under an Ark model id: refused for the first field Ark does not know
      const own = { ...normalized(samples[i]!).upstreamBody, model: i === 1 ? 'seedance-1-0-pro-250528' : 'seedream-4-0-250828' };
      const raw = await fetch(`${ch.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
        body: JSON.stringify(own),
      });
      expect(raw.status).toBe(400);
      const err = ((await raw.json()) as { error: { code: string; type: string; param: string } }).error;
      expect(err).toMatchObject({ code: 'InvalidParameter', type: 'BadRequest' });
      expect(['prompt', 'aspect_ratio', 'resolution', 'image_urls', 'n']).toContain(err.param);
    }
  });
});
