import { normalizedRequest } from '@gmg/testing';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { UpstreamError } from '@gmg/errors';
import { createUpstreamAdapters, type ChannelTarget, type UpstreamAdapter } from '@gmg/upstream';
import { createSimApp } from '../../app';

/**
 * The `openai` protocol adapter against the simulator's strict OpenAI mode (/openai) on a loopback port: what the
 * vendor saw, synchronous images (base64 that decodes to a real image), edits with references, moderation, 429 then
 * success, the video job to its keyed content, failure, cancel, and the refusals made before any money moves.
 */
const KEY = 'sk-openai-sim-key-0042';
let clock = Date.now();
let server: Server;
let base: string;
const adapter: UpstreamAdapter = createUpstreamAdapters({ timeoutMs: 5000, syncTimeoutMs: 20_000 }).getAdapter('openai')!;

const normalized = normalizedRequest;

const channel = (over: Partial<ChannelTarget> = {}): ChannelTarget => ({
  id: 'ch-openai',
  name: 'openai-sim',
  protocol: 'openai',
  baseUrl: `${base}/openai`,
  apiKey: KEY,
  modelMap: {},
  settings: { headers: { 'OpenAI-Organization': 'org-sim' } },
  ...over,
});

interface Seen {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}
async function lastSeen(path: string): Promise<Seen> {
  const all = ((await (await fetch(`${base}/__sim/vendor-requests`)).json()) as { requests: Seen[] }).requests;
  const hit = all.filter((r) => r.path === path).pop();
  if (!hit) throw new Error(`the vendor saw no ${path}`);
  return hit;
}

const errorOf = (p: Promise<unknown>): Promise<UpstreamError> =>
  p.then(
    () => {
      throw new Error('expected a failure');
    },
    (e: unknown) => e as UpstreamError,
  );

const unique = (s: string) => `${s} ${randomUUID()}`;
const pngSize = (b: Buffer) => ({ width: b.readUInt32BE(16), height: b.readUInt32BE(20) });

beforeAll(async () => {
  const app = createSimApp({ timeScale: 0.05, publicUrl: 'http://127.0.0.1:1', apiKey: KEY, now: () => clock });
  server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('openai adapter: images (synchronous)', () => {
  it('generates pict-image-2 through gpt-image-2: the vendor saw the translated body and our key; the answer is the finished task', async () => {
    const req = normalized({ model: 'pict-image-2', prompt: 'a lighthouse', size: '16:9' });
    const ch = channel();
    expect(adapter.check!(ch, req)).toBeUndefined();
    const out = await adapter.submit(ch, req, { taskId: 'task_ours_1' });
    const seen = await lastSeen('/openai/v1/images/generations');
    expect(seen.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen.headers['openai-organization']).toBe('org-sim');
    expect(seen.body).toEqual({ model: 'gpt-image-2', prompt: 'a lighthouse', n: 1, size: '1024x576' });
    expect(out.upstreamTaskId).toMatch(/^img_\d+_[0-9a-f]{10}$/);
    expect(out.done?.status).toBe('completed');
    const media = out.done!.media!;
    expect(media).toHaveLength(1);
    expect(media[0]).toMatchObject({ kind: 'image', width: 1024, height: 576 });
    const bytes = Buffer.from((media[0].source as { base64: string }).base64, 'base64');
    expect(bytes.subarray(1, 4).toString()).toBe('PNG');
    expect(pngSize(bytes)).toEqual({ width: 1024, height: 576 });
    // an image task never polls; if asked, the answer is a clear failure
    expect((await adapter.poll(ch, out.upstreamTaskId, { pool: 'image', model: 'pict-image-2' })).status).toBe('failed');
  });

  it('sends the model the channel maps (dream-5-0-lite → gpt-image-1.5) and asks for jpeg: n images come back as JPEG bytes', async () => {
    const req = normalized({ model: 'dream-5-0-lite', prompt: 'two cats', size: '1:1', resolution: '1K', n: 2 });
    const out = await adapter.submit(channel({ modelMap: { 'dream-5-0-lite': 'gpt-image-1.5' } }), req, { taskId: 'task_ours_2' });
    expect((await lastSeen('/openai/v1/images/generations')).body).toEqual({
      model: 'gpt-image-1.5',
      prompt: 'two cats',
      n: 2,
      size: '1024x1024',
      output_format: 'jpeg',
    });
    const media = out.done!.media!;
    expect(media).toHaveLength(2);
    for (const m of media) expect(Buffer.from((m.source as { base64: string }).base64, 'base64').subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
  });

  it('sends reference images to /v1/images/edits as [{image_url}]', async () => {
    const refs = ['https://example.com/a.png', 'https://example.com/b.png'];
    const req = normalized({ model: 'pict-image-2', prompt: 'merge them', size: '1:1', image_urls: refs });
    const out = await adapter.submit(channel(), req, { taskId: 'task_ours_3' });
    expect((await lastSeen('/openai/v1/images/edits')).body).toEqual({
      model: 'gpt-image-2',
      prompt: 'merge them',
      n: 1,
      size: '1024x1024',
      images: refs.map((image_url) => ({ image_url })),
    });
    expect(out.done?.media).toHaveLength(1);
  });

  it('a moderation refusal (400 moderation_blocked) is the final moderation failure', async () => {
    const e = await errorOf(adapter.submit(channel(), normalized({ model: 'pict-image-2', prompt: unique('[sim:moderation]') }), { taskId: 't4' }));
    expect(e).toBeInstanceOf(UpstreamError);
    expect(e.kind).toBe('moderation');
    expect(e.retryable).toBe(false);
    expect(e.message).not.toContain(KEY);
  });

  it('a 429 rate_limit_exceeded is a retry after Retry-After; the next call succeeds', async () => {
    const req = normalized({ model: 'pict-image-2', prompt: unique('[sim:429once]') });
    const e = await errorOf(adapter.submit(channel(), req, { taskId: 't5' }));
    expect(e.kind).toBe('quota');
    expect(e.retryable).toBe(true);
    expect(e.retryAfterMs).toBe(1000);
    expect((await adapter.submit(channel(), req, { taskId: 't5' })).done?.status).toBe('completed');
  });

  it('a wrong key is a channel failure (failover), and an Azure-style api-key header is what OpenAI itself refuses', async () => {
    const wrong = await errorOf(adapter.submit(channel({ apiKey: 'sk-wrong-key' }), normalized({ model: 'pict-image-2', prompt: 'x' }), { taskId: 't6' }));
    expect([wrong.status, wrong.kind, wrong.retryable]).toEqual([401, 'channel', true]);
    const azure = channel({ settings: { auth_header: 'api-key' } });
    expect(adapter.checkSettings!(azure.settings)).toBeUndefined();
    const e = await errorOf(adapter.submit(azure, normalized({ model: 'pict-image-2', prompt: 'x' }), { taskId: 't7' }));
    expect(e.status).toBe(401);
    expect((await lastSeen('/openai/v1/images/generations')).headers['api-key']).toBe(KEY);
  });
});

describe('openai adapter: the /v1/videos job', () => {
  const omni = (over: Record<string, unknown> = {}) =>
    normalized({ model: 'Omni-Flash-Ext', prompt: unique('a wave'), duration: 8, resolution: '720p', aspect_ratio: '16:9', ...over });

  it('submits, polls queued → in_progress → completed, and the content link needs the key', async () => {
    const ch = channel();
    const req = omni({ prompt: 'a wave' });
    expect(adapter.check!(ch, req)).toBeUndefined();
    clock = Date.now();
    const { upstreamTaskId: id, done } = await adapter.submit(ch, req, { taskId: 'task_v1' });
    expect(done).toBeUndefined();
    expect(id).toMatch(/^video_/);
    const seen = await lastSeen('/openai/v1/videos');
    expect(seen.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen.body).toEqual({ model: 'sora-2', prompt: 'a wave', seconds: '8', size: '1280x720' });
    expect(await adapter.poll(ch, id, { pool: 'video', model: 'Omni-Flash-Ext' })).toEqual({ status: 'pending', progress: 0 });
    clock += 200;
    const mid = await adapter.poll(ch, id, { pool: 'video', model: 'Omni-Flash-Ext' });
    expect(mid.status).toBe('processing');
    expect(mid.progress).toBeGreaterThan(0);
    clock += 1000;
    const end = await adapter.poll(ch, id, { pool: 'video', model: 'Omni-Flash-Ext' });
    expect(end.status).toBe('completed');
    const src = end.media![0].source as { url: string; headers: Record<string, string> };
    expect(end.media![0]).toMatchObject({ kind: 'video', width: 1280, height: 720, durationSeconds: 8 });
    expect(src.url).toBe(`${base}/openai/v1/videos/${id}/content`);
    expect(src.headers.Authorization).toBe(`Bearer ${KEY}`);
    expect((await fetch(src.url)).status).toBe(401);
    const ok = await fetch(src.url, { headers: src.headers });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('video/mp4');
    expect(
      Buffer.from(await ok.arrayBuffer())
        .subarray(4, 8)
        .toString(),
    ).toBe('ftyp');
  });

  it('a failed job is a failed poll with the vendor error; a moderated one is marked moderation', async () => {
    const ch = channel();
    clock = Date.now();
    const failed = await adapter.submit(ch, omni({ prompt: unique('[sim:fail]') }), { taskId: 'task_v2' });
    const moderated = await adapter.submit(ch, omni({ prompt: unique('[sim:moderation]') }), { taskId: 'task_v3' });
    clock += 1000;
    const f = await adapter.poll(ch, failed.upstreamTaskId);
    expect(f).toMatchObject({ status: 'failed', error: { type: 'video_generation_failed', moderation: false } });
    const m = await adapter.poll(ch, moderated.upstreamTaskId);
    expect(m).toMatchObject({ status: 'failed', error: { type: 'moderation_blocked', moderation: true } });
  });

  it('cancel deletes the job (DELETE /v1/videos/{id}); a second cancel of a gone job is not an error', async () => {
    const ch = channel();
    clock = Date.now();
    const { upstreamTaskId: id } = await adapter.submit(ch, omni(), { taskId: 'task_v4' });
    await adapter.cancel!(ch, id);
    expect((await lastSeen(`/openai/v1/videos/${id}`)).method).toBe('DELETE');
    const e = await errorOf(adapter.poll(ch, id));
    expect([e.status, e.kind]).toEqual([404, 'not_found']);
    await expect(adapter.cancel!(ch, id)).resolves.toBeUndefined();
  });

  it('refuses, before any call, what sora cannot render: 6 or 10 seconds, 1080p, a reference video, three images', () => {
    const ch = channel();
    expect(adapter.check!(ch, omni({ duration: 6 }))?.field).toBe('duration');
    expect(adapter.check!(ch, omni({ duration: 10 }))?.field).toBe('duration');
    expect(adapter.check!(ch, normalized({ model: 'Omni-Flash-Ext', prompt: 'x' }))?.field).toBe('duration');
    expect(adapter.check!(ch, omni({ resolution: '1080p' }))?.field).toBe('resolution');
    expect(adapter.check!(ch, omni({ image_urls: ['https://e.com/1.png', 'https://e.com/2.png', 'https://e.com/3.png'] }))?.field).toBe('image_urls');
    expect(adapter.check!(ch, normalized({ model: 'spark-imagine-1.5-video-main', prompt: 'x', duration: 8 }))?.field).toBe('resolution');
    expect(adapter.check!(ch, normalized({ model: 'spark-imagine-1.5-video-main', prompt: 'x', duration: 7, resolution: '720p' }))?.field).toBe('duration');
    expect(adapter.check!(ch, normalized({ model: 'pict-image-2', prompt: 'x', resolution: '4k' }))?.field).toBe('resolution');
    expect(adapter.check!(ch, normalized({ model: 'lumen-2-pro', prompt: 'x', resolution: '1MP' }))?.field).toBe('model');
    expect(adapter.checkSettings!({ auth_header: 'x-key' })?.field).toBe('auth_header');
    expect(adapter.checkSettings!({ region: 'eu' })?.field).toBe('region');
  });
});

describe('openai translation tables against the strict simulator', () => {
  const samples: Array<{ body: Record<string, unknown>; path: string }> = [
    { body: { model: 'pict-image-2', prompt: 'p', size: '3:2', resolution: '2k', n: 2 }, path: '/v1/images/generations' },
    { body: { model: 'spark-imagine-image-2.0', prompt: 'p', aspect_ratio: '9:16', quality: 'low' }, path: '/v1/images/generations' },
    { body: { model: 'spark-imagine-image-2.0', prompt: 'p', image_urls: ['https://e.com/r.png'] }, path: '/v1/images/edits' },
    { body: { model: 'dream-5-0-pro', prompt: 'p', size: '21:9', resolution: '2K' }, path: '/v1/images/generations' },
    { body: { model: 'Omni-Flash-Ext', prompt: 'p', duration: 4, aspect_ratio: '9:16', image_urls: ['https://e.com/r.png'] }, path: '/v1/videos' },
    { body: { model: 'spark-imagine-1.5-video-main', prompt: 'p', duration: 12, resolution: '720p', size: '9:16' }, path: '/v1/videos' },
  ];
  const ch = channel({ modelMap: { 'spark-imagine-image-2.0': 'gpt-image-2', 'dream-5-0-pro': 'gpt-image-2' } });

  it.each(samples)('$body.model → $path: the translation is accepted, our own body is refused', async ({ body, path }) => {
    const req = normalized(body);
    const c = { ...ch, baseUrl: `${base}/openai` };
    expect(adapter.check!(c, req)).toBeUndefined();
    await adapter.submit(c, req, { taskId: randomUUID() });
    expect((await lastSeen(`/openai${path}`)).body).toMatchObject({ prompt: 'p' });
    const vendorModel = (await lastSeen(`/openai${path}`)).body.model as string;
    const raw = await fetch(`${base}/openai${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...req.upstreamBody, model: vendorModel }),
    });
    expect(raw.status).toBe(400);
    expect(((await raw.json()) as { error: { code: string } }).error.code).toBe('unknown_parameter');
  });
});

describe('the simulator is strict as OpenAI documents', () => {
  const post = (path: string, body: unknown, auth = `Bearer ${KEY}`) =>
    fetch(`${base}/openai${path}`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const errOf = async (r: Response) => ({ status: r.status, ...((await r.json()) as { error: Record<string, unknown> }).error });

  it('refuses a missing or wrong key, an unknown model, a bad size, quality or n, and seconds that are not "4", "8" or "12"', async () => {
    expect(await errOf(await post('/v1/images/generations', { prompt: 'x' }, 'Bearer nope'))).toMatchObject({ status: 401, code: 'invalid_api_key' });
    expect(await errOf(await post('/v1/videos', { prompt: 'x' }, ''))).toMatchObject({ status: 401, type: 'invalid_request_error' });
    expect(await errOf(await post('/v1/images/generations', { model: 'gpt-image-9', prompt: 'x' }))).toMatchObject({ status: 404, code: 'model_not_found' });
    expect(await errOf(await post('/v1/images/generations', { model: 'gpt-image-1', prompt: 'x', size: '1024x576' }))).toMatchObject({
      status: 400,
      param: 'size',
      code: 'invalid_value',
    });
    expect(await errOf(await post('/v1/images/generations', { model: 'gpt-image-1', prompt: 'x', quality: 'hd' }))).toMatchObject({ param: 'quality' });
    expect(await errOf(await post('/v1/images/generations', { model: 'gpt-image-1', prompt: 'x', n: 11 }))).toMatchObject({ param: 'n' });
    expect(await errOf(await post('/v1/images/generations', { model: 'gpt-image-1', prompt: 'x', response_format: 'url' }))).toMatchObject({
      code: 'unknown_parameter',
    });
    expect(await errOf(await post('/v1/videos', { model: 'sora-2', prompt: 'x', seconds: 8 }))).toMatchObject({ param: 'seconds', code: 'invalid_type' });
    expect(await errOf(await post('/v1/videos', { model: 'sora-2', prompt: 'x', seconds: '6' }))).toMatchObject({ param: 'seconds', code: 'invalid_value' });
    expect(await errOf(await post('/v1/videos', { model: 'sora-2', prompt: 'x', size: '1792x1024' }))).toMatchObject({ param: 'size' });
    expect((await fetch(`${base}/openai/v1/videos/video_nope`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(404);
  });

  it('takes multipart/form-data for /v1/videos (what openai-node sends) and answers dall-e with a link', async () => {
    const form = new FormData();
    form.append('model', 'sora-2-pro');
    form.append('prompt', 'x');
    form.append('seconds', '12');
    form.append('size', '1792x1024');
    const r = await fetch(`${base}/openai/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` }, body: form });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ object: 'video', status: 'queued', progress: 0, seconds: '12', size: '1792x1024' });
    const d = (await (await post('/v1/images/generations', { model: 'dall-e-3', prompt: 'x' })).json()) as { data: Array<{ url: string }> };
    expect(d.data[0].url).toMatch(/\/vendor-files\/\d+\/task_\w+-0-1024x1024\.png$/);
  });
});
