import { normalizedRequest } from '@gmg/testing';
import { UpstreamError } from '@gmg/errors';
import { createUpstreamAdapters, type ChannelTarget, type UpstreamPoll } from '@gmg/upstream';
import { failure, listenVendorSim, type SeenRequest, type VendorSim } from '../vendor-sim.test-kit';

/**
 * The gemini adapter against the simulator's gemini mode over HTTP (loopback, port 0). Both share one injected
 * clock, so an operation ends, and its two-day file dies, when the test moves the clock.
 */
const KEY = 'AIza-gemini-key-0123456789';
const adapter = createUpstreamAdapters({ timeoutMs: 5000 }).getAdapter('gemini')!;

type Seen = SeenRequest;

describe('gemini adapter against upstream-sim /gemini', () => {
  let clock = Date.now();
  let sim: VendorSim;
  let origin: string;
  let ch: ChannelTarget;

  beforeAll(async () => {
    sim = await listenVendorSim('gemini', { apiKey: KEY, now: () => clock, timeScale: 1, id: 'gem1', name: 'gemini-sim' });
    ({ origin, channel: ch } = sim);
  });
  afterAll(async () => {
    await sim?.close();
  });

  const seen = (): Promise<Seen[]> => sim.seen();
  const omni = (over: Record<string, unknown> = {}) => normalizedRequest({ model: 'Omni-Flash-Ext', prompt: 'a wave', ...over });
  const submit = (over: Record<string, unknown> = {}, channel = ch) => adapter.submit(channel, omni(over), { taskId: 'task_ours' });
  const pollLater = (id: string, ms = 120_000): Promise<UpstreamPoll> => {
    clock += ms;
    return adapter.poll(ch, id, { pool: 'video', model: 'Omni-Flash-Ext' });
  };

  it('posts instances and parameters to the mapped model with x-goog-api-key, and keeps the operation name', async () => {
    const mapped = {
      ...ch,
      modelMap: { 'Omni-Flash-Ext': 'veo-3.1-generate-preview' },
      settings: { headers: { 'x-org': 'acme' }, body: { personGeneration: 'allow_all' } },
    };
    const { upstreamTaskId, done } = await submit({ duration: 8, resolution: '1080P', aspect_ratio: '9:16' }, mapped);
    expect(done).toBeUndefined();
    expect(upstreamTaskId).toMatch(/^models\/veo-3\.1-generate-preview\/operations\/[A-Za-z0-9]+$/);
    const post = (await seen()).filter((r) => r.method === 'POST').at(-1)!;
    expect(post.path).toBe('/gemini/v1beta/models/veo-3.1-generate-preview:predictLongRunning');
    expect(post.headers['x-goog-api-key']).toBe(KEY);
    expect(post.headers['x-org']).toBe('acme');
    expect(post.headers.authorization).toBeUndefined();
    expect(post.body).toEqual({
      instances: [{ prompt: 'a wave' }],
      parameters: { personGeneration: 'allow_all', durationSeconds: 8, resolution: '1080p', aspectRatio: '9:16' },
    });
  });

  it('polls to done: media whose link downloads with the key only, and is gone two days later', async () => {
    const { upstreamTaskId } = await submit({ duration: 4 });
    expect((await seen()).at(-1)!.path).toBe('/gemini/v1beta/models/veo-3.1-fast-generate-preview:predictLongRunning');
    expect(await adapter.poll(ch, upstreamTaskId)).toEqual({ status: 'processing', progress: 0 });
    expect((await seen()).at(-1)!.path).toBe(`/gemini/v1beta/${upstreamTaskId}`);
    const end = await pollLater(upstreamTaskId);
    expect(end.status).toBe('completed');
    const src = end.media![0]!.source as { url: string; headers: Record<string, string> };
    expect(end.media).toEqual([
      { kind: 'video', source: { url: expect.stringMatching(/:download\?alt=media$/) as string, headers: { 'x-goog-api-key': KEY } } },
    ]);
    expect(src.url.startsWith(`${origin}/gemini/v1beta/files/`)).toBe(true);
    expect((await fetch(src.url)).status).toBe(403);
    const ok = await fetch(src.url, { headers: src.headers });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('video/mp4');
    expect(
      Buffer.from(await ok.arrayBuffer())
        .subarray(4, 8)
        .toString(),
    ).toBe('ftyp');
    clock += 2 * 24 * 3600_000;
    const gone = await fetch(src.url, { headers: src.headers });
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as { error: { status: string } }).error.status).toBe('NOT_FOUND');
  });

  it('ends a failed operation as failed with its message, and an RAI-filtered one as moderation', async () => {
    const fail = await submit({ prompt: 'x [sim:fail]' });
    expect(await pollLater(fail.upstreamTaskId)).toEqual({
      status: 'failed',
      progress: 0,
      error: { message: 'Video generation failed (simulated)', moderation: false },
    });
    const rai = await submit({ prompt: 'nope [sim:moderation]' });
    expect(await pollLater(rai.upstreamTaskId)).toMatchObject({
      status: 'failed',
      error: { moderation: true, message: expect.stringContaining('usage guidelines') as string },
    });
  });

  it('keeps a [sim:never] operation running', async () => {
    const { upstreamTaskId } = await submit({ prompt: 'slow [sim:never]' });
    expect(await pollLater(upstreamTaskId, 3_600_000)).toEqual({ status: 'processing', progress: 0 });
  });

  it('answers RESOURCE_EXHAUSTED as a retry after its RetryInfo delay, then the same submit goes through', async () => {
    const prompt = `busy ${clock} [sim:429once]`;
    const e = await failure(submit({ prompt }));
    expect(e).toBeInstanceOf(UpstreamError);
    expect({ retryable: e?.retryable, kind: e?.kind, status: e?.status, retryAfterMs: e?.retryAfterMs }).toEqual({
      retryable: true,
      kind: 'quota',
      status: 429,
      retryAfterMs: 1000,
    });
    expect(e?.message).toContain('RESOURCE_EXHAUSTED');
    expect((await submit({ prompt })).upstreamTaskId).toContain('/operations/');
  });

  it('a wrong key (400 API_KEY_INVALID) fails over, unknown model and operation are final', async () => {
    const badKey = await failure(submit({}, { ...ch, apiKey: 'wrong-key-999' }));
    expect({ status: badKey?.status, retryable: badKey?.retryable, kind: badKey?.kind }).toEqual({ status: 401, retryable: true, kind: 'channel' });
    expect(badKey?.message).not.toContain('wrong-key-999');
    const noModel = await failure(submit({}, { ...ch, modelMap: { 'Omni-Flash-Ext': 'veo-9-ultra' } }));
    expect({ status: noModel?.status, retryable: noModel?.retryable }).toEqual({ status: 404, retryable: false });
    const noOp = await failure(adapter.poll(ch, 'models/veo-3.1-fast-generate-preview/operations/ghost1'));
    expect({ status: noOp?.status, retryable: noOp?.retryable, kind: noOp?.kind }).toEqual({ status: 404, retryable: false, kind: 'not_found' });
    await expect(adapter.poll(ch, '../../v1/tasks/x')).rejects.toMatchObject({ retryable: false, kind: 'not_found' });
  });

  it('refuses what Veo cannot honour before any call, naming the field', () => {
    expect(adapter.check!(ch, omni({ duration: 10 }))?.field).toBe('duration');
    expect(adapter.check!(ch, omni({ resolution: '4k' }))?.field).toBe('resolution');
    expect(adapter.check!(ch, omni({ resolution: '4k', duration: 8 }))).toBeUndefined();
    expect(adapter.check!(ch, omni({ image_urls: ['https://img.example.com/a.png'] }))?.field).toBe('image_urls');
    expect(adapter.check!(ch, omni({ video_urls: ['https://img.example.com/a.mp4'] }))?.field).toBe('video_urls');
    expect(adapter.check!(ch, normalizedRequest({ model: 'pixel-v6', prompt: 'x' }))?.field).toBe('model');
    expect(adapter.checkSettings!({ body: { sampleCount: 2 } })?.field).toBe('body.sampleCount');
    expect(adapter.checkSettings!({ region: 'eu' })?.field).toBe('region');
    expect(adapter.checkSettings!({ headers: { 'X-Goog-Api-Key': 'k' } })?.field).toBe('headers.X-Goog-Api-Key');
  });

  it('the simulator accepts the translated samples and refuses our untranslated body and broken ones', async () => {
    for (const over of [{ duration: 4 }, { duration: 6, aspect_ratio: '9:16' }, { duration: 8, resolution: '4k' }, { duration: 8, resolution: '1080p' }]) {
      await expect(submit(over)).resolves.toHaveProperty('upstreamTaskId');
    }
    const post = (body: unknown, key = KEY) =>
      fetch(`${ch.baseUrl}/v1beta/models/veo-3.1-fast-generate-preview:predictLongRunning`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
        body: JSON.stringify(body),
      });
    const expect400 = async (body: unknown, word: string) => {
      const res = await post(body);
      expect(res.status).toBe(400);
      const e = ((await res.json()) as { error: { code: number; status: string; message: string } }).error;
      expect({ code: e.code, status: e.status }).toEqual({ code: 400, status: 'INVALID_ARGUMENT' });
      expect(e.message).toContain(word);
    };
    await expect400(omni({ duration: 8 }).upstreamBody, 'model');
    await expect400({ instances: [{ prompt: 'x' }], parameters: { durationSeconds: 10 } }, 'durationSeconds');
    await expect400({ instances: [{ prompt: 'x' }], parameters: { aspectRatio: '1:1' } }, 'aspectRatio');
    await expect400({ instances: [{ prompt: 'x' }], parameters: { resolution: '1080p', durationSeconds: 6 } }, 'resolution');
    await expect400({ instances: [{ prompt: 'x' }], parameters: { seed: 3 } }, 'seed');
    await expect400({ instances: [{ prompt: 'x', image: { uri: 'https://img.example.com/a.png' } }] }, 'uri');
    await expect400({ instances: [{}] }, 'prompt');
    const noKey = await fetch(`${ch.baseUrl}/v1beta/models/veo-3.1-fast-generate-preview:predictLongRunning`, { method: 'POST', body: '{}' });
    expect(noKey.status).toBe(403);
    expect(((await noKey.json()) as { error: { status: string } }).error.status).toBe('PERMISSION_DENIED');
  });
});
