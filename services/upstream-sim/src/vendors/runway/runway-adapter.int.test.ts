import { normalizedRequest } from '@gmg/testing';
import { UpstreamError } from '@gmg/errors';
import { createUpstreamAdapters, type ChannelTarget, type UpstreamPoll } from '@gmg/upstream';
import { failure, listenVendorSim, type SeenRequest, type VendorSim } from '../vendor-sim.test-kit';

/**
 * The runway adapter against the simulator's runway mode over HTTP (loopback, port 0). Both share one injected
 * clock, so a task ends, and its 24-hour output link dies, when the test moves the clock.
 */
const KEY = 'runway-key-0123456789';
const IMG = 'https://img.example.com/first.png';
const IMG2 = 'https://img.example.com/last.png';

const normalized = normalizedRequest;

type Seen = SeenRequest;

describe('runway adapter against upstream-sim /runway', () => {
  let clock = Date.now();
  let sim: VendorSim;
  let ch: ChannelTarget;
  const adapter = createUpstreamAdapters({ timeoutMs: 5000 }).getAdapter('runway')!;

  beforeAll(async () => {
    sim = await listenVendorSim('runway', { apiKey: KEY, now: () => clock, timeScale: 1, id: 'rw1', name: 'runway-sim' });
    ch = sim.channel;
  });
  afterAll(async () => {
    await sim?.close();
  });

  const seen = (): Promise<Seen[]> => sim.seen();
  const lastPost = async () => (await seen()).filter((r) => r.method === 'POST').at(-1)!;
  const submit = (body: Record<string, unknown>, channel = ch) => adapter.submit(channel, normalized(body), { taskId: 'task_ours' });
  const pollLater = (id: string, ms = 600_000): Promise<UpstreamPoll> => {
    clock += ms;
    return adapter.poll(ch, id);
  };

  it('posts the translated body to text_to_video with Bearer and X-Runway-Version, the model from model_map', async () => {
    const mapped = { ...ch, modelMap: { 'reel-v4-std': 'seedance2_fast' }, settings: { headers: { 'x-org': 'acme' } } };
    await submit({ model: 'reel-v4-std', prompt: 'a lighthouse', duration: 8, resolution: '480p', aspect_ratio: '9:16' }, mapped);
    const post = await lastPost();
    expect(post.path).toBe('/runway/v1/text_to_video');
    expect(post.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(post.headers['x-runway-version']).toBe('2024-11-06');
    expect(post.headers['x-org']).toBe('acme');
    expect(post.body).toEqual({ model: 'seedance2_fast', promptText: 'a lighthouse', duration: 8, ratio: '496:864' });
  });

  it('sends frames to image_to_video and the channel runway_version as X-Runway-Version', async () => {
    const pinned = { ...ch, settings: { runway_version: '2024-11-06' } };
    await submit({ model: 'reel-v4-fast', prompt: 'from here to there', image_urls: [IMG, IMG2] }, pinned);
    const post = await lastPost();
    expect(post.path).toBe('/runway/v1/image_to_video');
    expect(post.body).toEqual({
      model: 'seedance2_fast',
      promptText: 'from here to there',
      duration: 5,
      ratio: '1280:720',
      promptImage: [
        { uri: IMG, position: 'first' },
        { uri: IMG2, position: 'last' },
      ],
    });
    const other = await failure(submit({ model: 'reel-v4-fast', prompt: 'x' }, { ...ch, settings: { runway_version: '2099-01-01' } }));
    expect({ status: other?.status, retryable: other?.retryable }).toEqual({ status: 400, retryable: false });
  });

  it('polls PENDING → RUNNING → SUCCEEDED: a video link that downloads, and 403 once its 24 hours are over', async () => {
    const { upstreamTaskId } = await submit({ model: 'Omni-Flash-Ext', prompt: 'a fox', duration: 4, resolution: '1080p', aspect_ratio: '9:16' });
    expect((await lastPost()).body).toEqual({ model: 'veo3.1_fast', promptText: 'a fox', duration: 4, ratio: '1080:1920' });
    expect(await adapter.poll(ch, upstreamTaskId)).toEqual({ status: 'pending', progress: 0 });
    const mid = await pollLater(upstreamTaskId, 3000);
    expect(mid.status).toBe('processing');
    expect(mid.progress).toBeGreaterThan(0);
    const done = await pollLater(upstreamTaskId);
    expect(done).toMatchObject({ status: 'completed', progress: 100 });
    const url = done.media?.[0]?.source && 'url' in done.media[0].source ? done.media[0].source.url : '';
    expect(done.media).toEqual([{ kind: 'video', source: { url } }]);
    const file = await fetch(url);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toContain('video/mp4');
    await file.arrayBuffer();
    clock += 24 * 3600_000;
    expect((await fetch(url)).status).toBe(403);
  });

  it('ends a failure neutral and a SAFETY failure as moderation', async () => {
    const failed = await submit({ model: 'reel-v4-std', prompt: 'x [sim:fail]' });
    expect(await pollLater(failed.upstreamTaskId)).toEqual({ status: 'failed', progress: 0, error: { message: 'Generation failed' } });
    const banned = await submit({ model: 'reel-v4-std', prompt: 'nope [sim:moderation]' });
    expect(await pollLater(banned.upstreamTaskId)).toMatchObject({ status: 'failed', error: { moderation: true } });
  });

  it('answers a 429 as a retry after Retry-After, then the same submit goes through', async () => {
    const body = { model: 'reel-v4-fast', prompt: `busy ${clock} [sim:429once]` };
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

  it('cancels a running task (CANCELLED, then deleted), and a second cancel of a gone task is quiet', async () => {
    const { upstreamTaskId } = await submit({ model: 'reel-v4-std', prompt: 'long [sim:never]' });
    clock += 60_000;
    await adapter.cancel!(ch, upstreamTaskId);
    expect((await seen()).at(-1)).toMatchObject({ method: 'DELETE', path: `/runway/v1/tasks/${upstreamTaskId}` });
    expect(await adapter.poll(ch, upstreamTaskId)).toMatchObject({ status: 'failed', error: { type: 'upstream_error' } });
    await adapter.cancel!(ch, upstreamTaskId);
    const gone = await failure(adapter.poll(ch, upstreamTaskId));
    expect({ status: gone?.status, retryable: gone?.retryable }).toEqual({ status: 404, retryable: false });
    await expect(adapter.cancel!(ch, upstreamTaskId)).resolves.toBeUndefined();
  });

  it('refuses what Runway cannot honour before any call', () => {
    const check = (body: Record<string, unknown>) => adapter.check!(ch, normalized(body))?.field;
    expect(check({ model: 'reel-v4-fast', prompt: 'x', resolution: '1080p' })).toBe('resolution');
    expect(check({ model: 'reel-v4-std', prompt: 'x', duration: 3 })).toBe('duration');
    expect(check({ model: 'Omni-Flash-Ext', prompt: 'x', duration: 10 })).toBe('duration');
    expect(check({ model: 'Omni-Flash-Ext', prompt: 'x', resolution: '4k' })).toBe('resolution');
    expect(check({ model: 'Omni-Flash-Ext', prompt: 'x', image_urls: [IMG, IMG2, IMG] })).toBe('image_urls');
    expect(check({ model: 'wave2.7-videoedit', prompt: 'x', video_urls: ['https://v.example.com/a.mp4'] })).toBe('model');
    expect(adapter.checkSettings!({ runway_version: 'latest' })?.field).toBe('runway_version');
    expect(adapter.checkSettings!({ region: 'eu' })?.field).toBe('region');
  });

  it('a wrong key fails over (channel) without the key in the message', async () => {
    const e = await failure(submit({ model: 'reel-v4-std', prompt: 'x' }, { ...ch, apiKey: 'wrong-key-999' }));
    expect({ status: e?.status, retryable: e?.retryable, kind: e?.kind }).toEqual({ status: 401, retryable: true, kind: 'channel' });
    expect(e?.message).not.toContain('wrong-key-999');
  });

  it("the simulator accepts each family's translated sample and refuses our untranslated body", async () => {
    const samples: Record<string, unknown>[] = [
      {
        model: 'reel-v4-std',
        prompt: 'refs',
        resolution: '1080p',
        aspect_ratio: '21:9',
        duration: 15,
        reference_image_urls: [IMG],
        video_urls: ['https://v.example.com/a.mp4'],
      },
      { model: 'reel-v4-fast', prompt: 'frames', first_frame_image: IMG, last_frame_image: IMG2 },
      {
        model: 'reel-v4-std',
        prompt: 'voice',
        image_with_roles: [{ url: IMG, role: 'reference_image' }],
        reference_audio_urls: ['https://a.example.com/a.mp3'],
      },
      { model: 'Omni-Flash-Ext', prompt: 'one frame', image_urls: [IMG], duration: 8, resolution: '720p', aspect_ratio: '16:9' },
    ];
    for (const body of samples) await expect(submit(body)).resolves.toHaveProperty('upstreamTaskId');
    const raw = await fetch(`${ch.baseUrl}/v1/text_to_video`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, 'x-runway-version': '2024-11-06' },
      body: JSON.stringify({ ...normalized(samples[0]!).upstreamBody, model: 'seedance2' }),
    });
    expect(raw.status).toBe(400);
    const answer = (await raw.json()) as { error: string; issues: { path: string[] }[] };
    expect(answer.error).toBe('Validation of body failed');
    expect(answer.issues.map((i) => i.path[0])).toEqual(expect.arrayContaining(['promptText', 'prompt', 'resolution', 'aspect_ratio', 'reference_image_urls']));
  });
});
