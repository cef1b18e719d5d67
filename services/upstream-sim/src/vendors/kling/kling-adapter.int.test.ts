import { normalizedRequest } from '@gmg/testing';
import { createHmac } from 'node:crypto';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UpstreamError } from '@gmg/errors';
import { createUpstreamAdapters, type ChannelTarget, type UpstreamAdapter, type UpstreamPoll } from '@gmg/upstream';
import { createSimApp } from '../../app';

/**
 * The `kling` adapter against the simulator's strict Kling mode (/kling) on a loopback port. The simulator's clock is
 * wall time plus an offset the test moves (the adapter signs its JWT on wall time: both agree on "now"), so a task
 * ends, a JWT expires and a 30-day link dies when the test says so.
 */
const ACCESS = 'ak-kling-sim-0042';
const SECRET = 'sk-kling-sim-secret-0042';
const KEY = `${ACCESS}|${SECRET}`;
let offset = 0;
const now = () => Date.now() + offset;
let server: Server;
let base: string;
const adapter: UpstreamAdapter = createUpstreamAdapters({ timeoutMs: 5000 }).getAdapter('kling')!;
const normalized = normalizedRequest;

const channel = (over: Partial<ChannelTarget> = {}): ChannelTarget => ({
  id: 'ch-kling',
  name: 'kling-sim',
  protocol: 'kling',
  baseUrl: `${base}/kling`,
  apiKey: KEY,
  modelMap: {},
  settings: {},
  ...over,
});

interface Seen {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}
const seen = async (): Promise<Seen[]> => ((await (await fetch(`${base}/__sim/vendor-requests`)).json()) as { requests: Seen[] }).requests;
const lastPost = async (): Promise<Seen> => (await seen()).filter((r) => r.method === 'POST' && r.path.startsWith('/kling')).at(-1)!;

const errorOf = (p: Promise<unknown>): Promise<UpstreamError> =>
  p.then(
    () => {
      throw new Error('expected a failure');
    },
    (e: unknown) => e as UpstreamError,
  );
const unique = (s: string) => `${s} ${randomUUID()}`;
const submit = (body: Record<string, unknown>, ch = channel()) =>
  adapter.submit(ch, normalized({ model: 'kinetic-video-o1', ...body }), { taskId: 'task_ours' });
const pollLater = (id: string, ms = 60_000): Promise<UpstreamPoll> => {
  offset += ms;
  return adapter.poll(channel(), id);
};
const decode = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;

beforeAll(async () => {
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  server.on('request', createSimApp({ timeScale: 0.05, publicUrl: base, apiKey: KEY, now }));
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('kling adapter against upstream-sim /kling', () => {
  it('posts the translated Omni-Video body with a Bearer JWT that verifies with the secret, and reuses it', async () => {
    const ch = channel({ modelMap: { 'kinetic-video-o1': 'kling-v3-omni' }, settings: { headers: { 'x-trace': 't1' } } });
    const { upstreamTaskId } = await submit({ prompt: 'a red kite', mode: 'pro', duration: 10, aspect_ratio: '9:16' }, ch);
    expect(upstreamTaskId).toMatch(/^omni-video:task_/);
    const post = await lastPost();
    expect(post.path).toBe('/kling/v1/videos/omni-video');
    expect(post.headers['x-trace']).toBe('t1');
    expect(post.body).toEqual({ model_name: 'kling-v3-omni', prompt: 'a red kite', mode: 'pro', duration: '10', aspect_ratio: '9:16' });

    const token = /^Bearer (.+)$/.exec(post.headers.authorization!)![1]!;
    const [h, p, sig] = token.split('.') as [string, string, string];
    expect(createHmac('sha256', SECRET).update(`${h}.${p}`).digest('base64url')).toBe(sig);
    expect(createHmac('sha256', 'another-secret').update(`${h}.${p}`).digest('base64url')).not.toBe(sig);
    expect(decode(h)).toEqual({ alg: 'HS256', typ: 'JWT' });
    const claims = decode(p) as { iss: string; exp: number; nbf: number };
    expect(claims.iss).toBe(ACCESS);
    expect(claims.exp - claims.nbf).toBe(1805);
    expect(Math.abs(claims.exp - (Date.now() / 1000 + 1800))).toBeLessThan(60);
    expect(JSON.stringify(post)).not.toContain(SECRET);

    await adapter.poll(ch, upstreamTaskId);
    const get = (await seen()).filter((r) => r.method === 'GET').at(-1)!;
    expect(get.path).toBe(`/kling/v1/videos/omni-video/${upstreamTaskId.slice('omni-video:'.length)}`);
    expect(get.headers.authorization).toBe(`Bearer ${token}`);
  });

  it('the JWT expires: the vendor takes it now and refuses it (code 1004) once exp has passed', async () => {
    await submit({ prompt: unique('expiry') });
    const token = (await lastPost()).headers.authorization!;
    const query = () => fetch(`${base}/kling/v1/videos/omni-video/task_nope`, { headers: { authorization: token } });
    expect((await query()).status).toBe(404);
    const saved = offset;
    offset += 31 * 60_000;
    try {
      const late = await query();
      expect(late.status).toBe(401);
      expect(await late.json()).toMatchObject({ code: 1004 });
    } finally {
      offset = saved;
    }
  });

  it('polls submitted → succeed: media whose link serves the video, gone after Kling’s 30 days', async () => {
    const { upstreamTaskId } = await submit({ prompt: unique('a fox'), duration: 5 });
    expect(await adapter.poll(channel(), upstreamTaskId)).toEqual({ status: 'pending', progress: 0 });
    const done = await pollLater(upstreamTaskId);
    expect(done).toMatchObject({ status: 'completed', progress: 100, media: [{ kind: 'video', durationSeconds: 5 }] });
    const source = done.media![0]!.source as { url: string; headers?: unknown };
    expect(source.headers).toBeUndefined();
    const file = await fetch(source.url);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toMatch(/video\/mp4/);
    await file.arrayBuffer();
    const saved = offset;
    offset += 30 * 24 * 3600_000 + 60_000;
    try {
      expect((await fetch(source.url)).status).toBe(403);
    } finally {
      offset = saved;
    }
  });

  it('a failed task fails with a neutral message; a content refusal is a final moderation', async () => {
    const { upstreamTaskId } = await submit({ prompt: unique('x [sim:fail]') });
    expect(await pollLater(upstreamTaskId)).toEqual({ status: 'failed', progress: 0, error: { message: 'Generation failed' } });
    const e = await errorOf(submit({ prompt: unique('nope [sim:moderation]') }));
    expect({ kind: e.kind, retryable: e.retryable, status: e.status }).toEqual({ kind: 'moderation', retryable: false, status: 400 });
  });

  it('a rate limit (1302) is a quota retry after Retry-After; arrears (1101, also HTTP 429) fail over as the channel', async () => {
    const body = { prompt: unique('busy [sim:429once]') };
    const e = await errorOf(submit(body));
    expect({ kind: e.kind, retryable: e.retryable, status: e.status, retryAfterMs: e.retryAfterMs }).toEqual({
      kind: 'quota',
      retryable: true,
      status: 429,
      retryAfterMs: 1000,
    });
    expect((await submit(body)).upstreamTaskId).toMatch(/^omni-video:/);
    const broke = await errorOf(submit({ prompt: unique('[sim:arrears]') }));
    expect({ kind: broke.kind, retryable: broke.retryable, status: broke.status }).toEqual({ kind: 'channel', retryable: true, status: 429 });
  });

  it('a wrong secret or a key without the access|secret shape fails over (channel) and never shows the key', async () => {
    const wrong = await errorOf(submit({ prompt: 'x' }, channel({ apiKey: `${ACCESS}|not-the-secret-77` })));
    expect({ kind: wrong.kind, retryable: wrong.retryable, status: wrong.status }).toEqual({ kind: 'channel', retryable: true, status: 401 });
    expect(wrong.message).toContain('code 1000');
    expect(wrong.message).not.toContain('not-the-secret-77');
    const shape = await errorOf(submit({ prompt: 'x' }, channel({ apiKey: 'just-one-part-99' })));
    expect({ kind: shape.kind, retryable: shape.retryable }).toEqual({ kind: 'channel', retryable: true });
    expect(shape.message).not.toContain('just-one-part-99');
  });

  it('an unknown task is final; a stored id that is not a Kling reference is final', async () => {
    expect(await errorOf(adapter.poll(channel(), 'omni-video:task_ghost'))).toMatchObject({ kind: 'not_found', retryable: false, status: 404 });
    expect(await errorOf(adapter.poll(channel(), '../../etc:passwd'))).toMatchObject({ kind: 'not_found', retryable: false });
  });

  it('refuses before any call what Kling cannot carry: an extra key of the reference video, another model', () => {
    const req = normalized({ model: 'kinetic-video-o1', prompt: 'x', video_list: [{ video_url: 'https://v.example.com/a.mp4', speed: 2 }] });
    expect(adapter.check!(channel(), req)).toMatchObject({ field: 'video_list.0.speed' });
    expect(adapter.check!(channel(), normalized({ model: 'clipq3-pro', prompt: 'x' }))).toMatchObject({ field: 'model' });
    expect(adapter.checkSettings!({ body: { callback_url: 'https://x' } })).toMatchObject({ field: 'body.callback_url' });
  });

  it('the simulator accepts each translated shape of kinetic-video-o1 and refuses our untranslated body', async () => {
    const video = 'https://v.example.com/clip.mp4';
    const samples: Record<string, unknown>[] = [
      { prompt: unique('text only'), aspect_ratio: '1:1' },
      { prompt: unique('frames'), image_urls: ['https://i.example.com/a.png', 'https://i.example.com/b.png'], duration: 10 },
      { prompt: unique('edit <<<video_1>>>'), video_list: [{ video_url: video, keep_original_sound: 'yes' }] },
      { prompt: unique('next shot'), image_urls: ['https://i.example.com/a.png'], video_list: [{ video_url: video, refer_type: 'feature' }] },
    ];
    for (const s of samples) await expect(submit(s)).resolves.toHaveProperty('upstreamTaskId');
    const frames = (await seen()).filter((r) => r.method === 'POST').at(-3)!.body;
    expect(frames.image_list).toEqual([
      { image_url: 'https://i.example.com/a.png', type: 'first_frame' },
      { image_url: 'https://i.example.com/b.png', type: 'end_frame' },
    ]);
    expect(frames).not.toHaveProperty('aspect_ratio');
    const edit = (await seen()).filter((r) => r.method === 'POST').at(-2)!.body;
    expect(edit).toEqual({
      model_name: 'kling-video-o1',
      prompt: expect.stringContaining('edit'),
      mode: 'std',
      video_list: [{ video_url: video, refer_type: 'base', keep_original_sound: 'yes' }],
    });

    const token = (await lastPost()).headers.authorization!;
    const raw = await fetch(`${base}/kling/v1/videos/omni-video`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: token },
      body: JSON.stringify(normalized({ model: 'kinetic-video-o1', ...samples[1] }).upstreamBody),
    });
    expect(raw.status).toBe(400);
    expect(await raw.json()).toMatchObject({ code: 1201 });
    const noAuth = await fetch(`${base}/kling/v1/videos/omni-video`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(noAuth.status).toBe(401);
    expect(await noAuth.json()).toMatchObject({ code: 1001 });
  });
});
