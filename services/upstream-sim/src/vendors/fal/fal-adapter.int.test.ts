import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import express from 'express';
import { resolveModel, validateRequest, type NormalizedRequest } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import { createLogger } from '@gmg/logger';
import { createUpstreamAdapters, type ChannelTarget, type UpstreamAdapter } from '@gmg/upstream';
import { createSimApp } from '../../app';
import { ImageRenderer } from '../../media/image-renderer';
import { SimTaskStore } from '../../sim-task.store';
import { FAL_LINK_TTL_MS, falSimRouter, type FalSimSubmit } from './fal-sim.router';

/**
 * The fal adapter against the simulator's strict fal mode over real HTTP on loopback. Lives with the simulator (a
 * lib may not import a service); the adapter is reached through @gmg/upstream's registry like the workers do. The
 * clock is injected: statuses and link expiry move when the test moves it, nothing waits on wall time.
 */
const KEY = 'fal-key-0123456789';
let clock = Date.parse('2025-06-01T00:00:00Z');
const now = () => clock;
const seen: FalSimSubmit[] = [];
let server: Server;
let base: string;
let ch: ChannelTarget;
const fal: UpstreamAdapter = createUpstreamAdapters({ timeoutMs: 5000 }).getAdapter('fal')!;

function request(model: string, body: Record<string, unknown>): NormalizedRequest {
  const v = validateRequest(resolveModel(model)!, { model, ...body }, model);
  if (!v.ok) throw new Error(v.violation.message);
  return v.value;
}
const unique = (marker = '') => `${marker} a lighthouse ${randomUUID()}`;
/** Moves the simulated clock past every task's end (images 2 s, videos 6-10 s at time scale 1). */
const finish = () => (clock += 11_000);

beforeAll(async () => {
  const outer = express();
  server = await new Promise<Server>((resolve) => {
    const s = outer.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const ctx = {
    publicUrl: base,
    apiKey: KEY,
    timeScale: 1,
    now,
    log: createLogger({ service: 'fal-sim-test', level: 'silent' }),
    store: new SimTaskStore(),
    images: new ImageRenderer(),
  };
  // the fal mode with a hook that records what fal saw; the simulator's own app serves the result files
  outer.use('/fal', falSimRouter(ctx, { onSubmit: (s) => seen.push(s) }));
  outer.use(createSimApp({ timeScale: 1, publicUrl: base, apiKey: KEY, now }));
  ch = {
    id: 'ch-fal',
    name: 'fal-sim',
    protocol: 'fal',
    baseUrl: `${base}/fal`,
    apiKey: KEY,
    modelMap: { 'lumen-2-pro': 'fal-ai/flux-2-max' },
    settings: { headers: { 'X-Org': 'o1' } },
  };
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('fal adapter against the strict fal simulator', () => {
  it('submits to the mapped endpoint with the key and the translated input, then polls to a kept image that downloads', async () => {
    const req = request('lumen-2-pro', { prompt: unique(), size: '16:9', resolution: '1MP', output_format: 'png', seed: 5 });
    const { upstreamTaskId } = await fal.submit(ch, req, { taskId: 'task_1' });
    const sent = seen.at(-1)!;
    expect(sent.endpoint).toBe('fal-ai/flux-2-max');
    expect(sent.authorization).toBe(`Key ${KEY}`);
    expect(sent.input).toEqual({
      prompt: req.upstreamBody.prompt,
      image_size: { width: req.expected.width, height: req.expected.height },
      output_format: 'png',
      seed: 5,
      safety_tolerance: '2',
    });
    expect(upstreamTaskId).toMatch(/^fal-ai\/flux-2-max\/requests\/task_/);

    expect(await fal.poll(ch, upstreamTaskId)).toEqual({ status: 'pending', progress: 10 });
    clock += 1000;
    expect(await fal.poll(ch, upstreamTaskId)).toEqual({ status: 'processing', progress: 50 });
    finish();
    const done = await fal.poll(ch, upstreamTaskId);
    expect(done.status).toBe('completed');
    expect(done.media).toHaveLength(1);
    const file = done.media![0]!;
    expect(file).toMatchObject({ kind: 'image', width: req.expected.width, height: req.expected.height });
    const url = (file.source as { url: string }).url;
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(
      Buffer.from(await res.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
    // fal's link dies (an hour here): the gateway keeps the file, the vendor's link is not the result
    clock += FAL_LINK_TTL_MS;
    expect((await fetch(url)).status).toBe(403);
  });

  it('answers a failed request as failed (not moderation), from the response URL', async () => {
    const { upstreamTaskId } = await fal.submit(ch, request('dream-5-0-lite', { prompt: unique('[sim:fail]'), n: 2 }), { taskId: 't' });
    finish();
    const p = await fal.poll(ch, upstreamTaskId);
    expect(p.status).toBe('failed');
    expect(p.error?.moderation).toBe(false);
    expect(p.error?.message).toContain('Generation failed');
    expect(p.error?.message).not.toContain('fal-sim');
  });

  it('turns has_nsfw_concepts on images and a content-policy 422 on video into a moderation failure', async () => {
    const img = await fal.submit(ch, request('pict-image-2', { prompt: unique('[sim:moderation]') }), { taskId: 't' });
    const vid = await fal.submit(ch, request('pixel-v6', { prompt: unique('[sim:moderation]') }), { taskId: 't' });
    expect(seen.at(-1)!.endpoint).toBe('fal-ai/pixverse/v5.6/text-to-video');
    finish();
    for (const id of [img.upstreamTaskId, vid.upstreamTaskId]) {
      const p = await fal.poll(ch, id);
      expect(p).toMatchObject({ status: 'failed', error: { moderation: true } });
    }
  });

  it('carries the 429 Retry-After on the UpstreamError, and the next submit is accepted', async () => {
    const req = request('motion-1-0-pro-fast', { prompt: unique('[sim:429once]'), image_urls: ['https://example.com/a.png'] });
    const err = await fal.submit(ch, req, { taskId: 't' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ status: 429, retryable: true, kind: 'quota', retryAfterMs: 1000 });
    const ok = await fal.submit(ch, req, { taskId: 't' });
    expect(ok.upstreamTaskId).toMatch(/^fal-ai\/bytedance\/requests\//);
    expect(seen.at(-1)).toMatchObject({ endpoint: 'fal-ai/bytedance/seedance/v1/pro/fast/image-to-video', input: { image_url: 'https://example.com/a.png' } });
  });

  it('refuses a field fal cannot carry before any call, naming it', async () => {
    const req = request('Omni-Flash-Ext', { prompt: unique(), duration: 10 });
    expect(fal.check!(ch, req)).toMatchObject({ field: 'duration' });
    const before = seen.length;
    await expect(fal.submit(ch, req, { taskId: 't' })).rejects.toMatchObject({ retryable: false, kind: 'bad_request' });
    expect(seen.length).toBe(before);
    expect(fal.checkSettings!({ region: 'eu' })).toMatchObject({ field: 'region' });
    expect(fal.checkSettings!({ headers: {}, body: {} })).toBeUndefined();
  });

  it('cancels a queued request; a second cancel (already completed) is not an error', async () => {
    const { upstreamTaskId } = await fal.submit(ch, request('clipq3-turbo', { prompt: unique() }), { taskId: 't' });
    await fal.cancel!(ch, upstreamTaskId);
    await expect(fal.cancel!(ch, upstreamTaskId)).resolves.toBeUndefined();
    finish();
    expect(await fal.poll(ch, upstreamTaskId)).toMatchObject({ status: 'failed' });
  });

  it('answers the vendor refusals: a wrong key (401, retryable on another channel), an unknown request (404)', async () => {
    const wrong = { ...ch, apiKey: 'not-the-key' };
    await expect(fal.submit(wrong, request('lumen-2-flex', { prompt: unique() }), { taskId: 't' })).rejects.toMatchObject({ status: 401, kind: 'channel' });
    await expect(fal.poll(ch, 'fal-ai/flux-2-pro/requests/task_unknown')).rejects.toMatchObject({ status: 404, retryable: false });
  });

  it('the simulator refuses an input its fal page does not allow with fal 422 detail', async () => {
    const res = await fetch(`${base}/fal/fal-ai/flux-2-pro`, {
      method: 'POST',
      headers: { authorization: `Key ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'x', safety_tolerance: 2, n: 1 }),
    });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { detail: Array<{ loc: string[]; type: string }> };
    expect(body.detail.map((d) => `${d.loc.join('.')}:${d.type}`)).toEqual(['body.safety_tolerance:enum', 'body.n:extra_forbidden']);
  });
});
