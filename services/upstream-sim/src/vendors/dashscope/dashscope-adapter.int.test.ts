import { normalizedRequest as normalized } from '@gmg/testing';
import { UpstreamError } from '@gmg/errors';
import { createUpstreamAdapters, type ChannelTarget, type UpstreamAdapter, type UpstreamPoll } from '@gmg/upstream';
import { failure, listenVendorSim, type SeenRequest, type VendorSim } from '../vendor-sim.test-kit';

/**
 * The dashscope adapter against the simulator's /dashscope mode over HTTP (loopback, port 0). The simulator runs on
 * an injected clock: a task ends, and its 24-hour video link dies, when the test moves the clock.
 */
const KEY = 'sk-dashscope-0123456789';
const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const SUBMIT = '/dashscope/api/v1/services/aigc/video-generation/video-synthesis';

type Seen = SeenRequest;

const I2V = { model: 'wave2.6-i2v-flash', image_urls: ['https://img.example.com/cat.png'], prompt: 'a cat waves' };

describe('dashscope adapter against upstream-sim /dashscope', () => {
  let clock = Date.now();
  let sim: VendorSim;
  let origin: string;
  let ch: ChannelTarget;
  const adapter = createUpstreamAdapters({ timeoutMs: 5000 }).getAdapter('dashscope') as UpstreamAdapter;

  beforeAll(async () => {
    sim = await listenVendorSim('dashscope', { apiKey: KEY, now: () => clock, timeScale: 1, id: 'ds1', name: 'dashscope-sim' });
    ({ origin, channel: ch } = sim);
  });
  afterAll(async () => {
    await sim?.close();
  });

  const seen = (): Promise<Seen[]> => sim.seen();
  const submit = (body: Record<string, unknown>, channel = ch) => adapter.submit(channel, normalized(body), { taskId: 'task_ours' });
  const pollLater = (id: string, ms = 600_000): Promise<UpstreamPoll> => {
    clock += ms;
    return adapter.poll(ch, id);
  };

  it('posts the nested body to video-synthesis with Bearer and X-DashScope-Async, under the mapped model', async () => {
    const mapped = {
      ...ch,
      modelMap: { 'wave2.6-i2v-flash': 'wan2.6-i2v-flash' },
      settings: { headers: { 'x-org': 'acme' }, body: { 'parameters.watermark': true } },
    };
    await submit({ ...I2V, resolution: '720p', duration: 8, seed: 7, negative_prompt: 'blur', audio_url: 'https://a.example.com/s.mp3' }, mapped);
    const post = (await seen()).filter((r) => r.method === 'POST').at(-1)!;
    expect(post.path).toBe(SUBMIT);
    expect(post.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(post.headers['x-dashscope-async']).toBe('enable');
    expect(post.headers['x-org']).toBe('acme');
    expect(post.body).toEqual({
      model: 'wan2.6-i2v-flash',
      input: { img_url: 'https://img.example.com/cat.png', prompt: 'a cat waves', negative_prompt: 'blur', audio_url: 'https://a.example.com/s.mp3' },
      // the translated `watermark: false` (our default) wins over the channel's fixed body
      parameters: { resolution: '720P', duration: 8, audio: true, prompt_extend: true, shot_type: 'single', watermark: false, seed: 7 },
    });
  });

  it('polls PENDING → RUNNING → SUCCEEDED: a video media whose link downloads, and dies after Model Studio’s 24 hours', async () => {
    const { upstreamTaskId } = await submit(I2V);
    expect(await adapter.poll(ch, upstreamTaskId)).toEqual({ status: 'pending', progress: 0 });
    expect(await pollLater(upstreamTaskId, 3_000)).toEqual({ status: 'processing', progress: 50 });
    const done = await pollLater(upstreamTaskId);
    expect(done).toMatchObject({ status: 'completed', progress: 100 });
    const url = done.media?.[0]?.source && 'url' in done.media[0].source ? done.media[0].source.url : '';
    expect(done.media).toEqual([{ kind: 'video', source: { url } }]);
    const file = await fetch(url);
    expect(file.status).toBe(200);
    expect((await file.arrayBuffer()).byteLength).toBeGreaterThan(0);
    clock += 24 * 3600_000;
    expect((await fetch(url)).status).toBe(403);
  });

  it('ends a FAILED task with the neutral word, and an output-moderated one as a moderation', async () => {
    const failed = await submit({ ...I2V, prompt: 'x [sim:fail]' });
    expect(await pollLater(failed.upstreamTaskId)).toEqual({ status: 'failed', progress: 0, error: { message: 'Generation failed' } });
    const moderated = await submit({ ...I2V, prompt: 'x [sim:moderation]' });
    expect(await pollLater(moderated.upstreamTaskId)).toMatchObject({ status: 'failed', error: { moderation: true } });
  });

  it('reads an input-inspection refusal at submit as a final moderation', async () => {
    const e = await failure(submit({ ...I2V, prompt: 'x [sim:input-moderated]' }));
    expect({ status: e?.status, retryable: e?.retryable, kind: e?.kind }).toEqual({ status: 400, retryable: false, kind: 'moderation' });
  });

  it('reads UNKNOWN as pending just after the submit, and as a final failure later', async () => {
    expect(await adapter.poll(ch, JSON.stringify({ id: 'ghost', at: Date.now() }))).toEqual({ status: 'pending', progress: 0 });
    expect(await adapter.poll(ch, JSON.stringify({ id: 'ghost', at: 0 }))).toMatchObject({ status: 'failed', error: { type: 'upstream_error' } });
  });

  it('answers a 429 Throttling as a retry after Retry-After, then the same submit goes through', async () => {
    const body = { ...I2V, prompt: `busy ${clock} [sim:429once]` };
    const e = await failure(submit(body));
    expect(e).toBeInstanceOf(UpstreamError);
    expect({ retryable: e?.retryable, kind: e?.kind, status: e?.status, retryAfterMs: e?.retryAfterMs }).toEqual({
      retryable: true,
      kind: 'quota',
      status: 429,
      retryAfterMs: 1000,
    });
    await expect(submit(body)).resolves.toHaveProperty('upstreamTaskId');
  });

  it('cancels a PENDING task (CANCELED on the next poll); a cancel of a running task is no error', async () => {
    const pending = await submit(I2V);
    await adapter.cancel!(ch, pending.upstreamTaskId);
    expect(await adapter.poll(ch, pending.upstreamTaskId)).toMatchObject({ status: 'failed', error: { type: 'upstream_error' } });
    const running = await submit(I2V);
    clock += 3_000;
    await expect(adapter.cancel!(ch, running.upstreamTaskId)).resolves.toBeUndefined();
    expect((await adapter.poll(ch, running.upstreamTaskId)).status).toBe('processing');
  });

  it('refuses what Model Studio cannot honour before any call: an edit longer than 10 s, a field no model takes', () => {
    const edit = normalized({ model: 'wave2.7-videoedit', video_urls: ['https://v.example.com/a.mp4'], prompt: 'clay', duration: 12 });
    expect(adapter.check!(ch, edit)?.field).toBe('duration');
    const i2v = normalized(I2V);
    expect(adapter.check!(ch, { ...i2v, upstreamBody: { ...i2v.upstreamBody, fps: 30 } })?.field).toBe('fps');
    expect(adapter.checkSettings!({ body: { watermark: true } })?.field).toBe('body.watermark');
  });

  it('a wrong key fails over (401 InvalidApiKey, the key not in the message); a model Model Studio lacks is final', async () => {
    const badKey = await failure(submit(I2V, { ...ch, apiKey: 'wrong-key-999' }));
    expect({ status: badKey?.status, retryable: badKey?.retryable, kind: badKey?.kind }).toEqual({ status: 401, retryable: true, kind: 'channel' });
    expect(badKey?.message).not.toContain('wrong-key-999');
    const noSuch = await failure(submit(I2V, { ...ch, modelMap: { 'wave2.6-i2v-flash': 'wan9-i2v' } }));
    expect({ status: noSuch?.status, retryable: noSuch?.retryable }).toEqual({ status: 400, retryable: false });
  });

  it("the simulator accepts each family's translated sample and refuses our untranslated body", async () => {
    const samples: Record<string, unknown>[] = [
      { ...I2V, audio: false, shot_type: 'multi', watermark: true },
      {
        model: 'wave2.7-videoedit',
        video_urls: ['https://v.example.com/a.mp4'],
        image_urls: ['https://i.example.com/1.png'],
        prompt: 'clay',
        resolution: '720p',
        duration: 6,
      },
      {
        model: 'wave2.7-r2v',
        prompt: 'Image 1 dances',
        image_with_roles: [{ url: 'https://i.example.com/1.png' }, { url: 'https://i.example.com/2.png' }],
        reference_voice_url: 'https://a.example.com/v.mp3',
      },
    ];
    for (const body of samples) await expect(submit(body)).resolves.toHaveProperty('upstreamTaskId');
    // a Base64 first frame without its data: prefix (the contract measures real ones; 1 px stands in here)
    const i2v = normalized(samples[0]!);
    await adapter.submit(ch, { ...i2v, upstreamBody: { ...i2v.upstreamBody, image_urls: [PNG_1PX] } }, { taskId: 't' });
    const posts = (await seen()).filter((r) => r.method === 'POST' && r.path === SUBMIT).slice(-4);
    expect((posts[3]!.body.input as Record<string, unknown>).img_url).toBe(`data:image/png;base64,${PNG_1PX}`);
    expect((posts[1]!.body.input as Record<string, unknown>).media).toEqual([
      { type: 'video', url: 'https://v.example.com/a.mp4' },
      { type: 'reference_image', url: 'https://i.example.com/1.png' },
    ]);
    expect((posts[2]!.body.input as Record<string, unknown>).media).toEqual([
      { type: 'reference_image', url: 'https://i.example.com/1.png', reference_voice: 'https://a.example.com/v.mp3' },
      { type: 'reference_image', url: 'https://i.example.com/2.png' },
    ]);
    for (const body of samples) {
      const raw = await fetch(`${origin}${SUBMIT}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, 'x-dashscope-async': 'enable' },
        body: JSON.stringify(normalized(body).upstreamBody),
      });
      expect(raw.status).toBe(400);
      expect(await raw.json()).toMatchObject({ code: 'InvalidParameter' });
    }
    const sync = await fetch(`${origin}${SUBMIT}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: '{}',
    });
    expect(sync.status).toBe(403);
  });
});
