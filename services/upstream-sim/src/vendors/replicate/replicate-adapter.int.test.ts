import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { resolveModel, validateRequest, type NormalizedRequest } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import { createUpstreamAdapters, type ChannelTarget } from '@gmg/upstream';
import { createSimApp } from '../../app';

const KEY = 'r8_sim-secret-key-123456';
const REF = 'https://example.com/ref.png';

/** Our validated request for `body` (the real contracts: defaults filled as the edge fills them). */
function request(body: Record<string, unknown>): NormalizedRequest {
  const model = resolveModel(String(body.model));
  if (!model) throw new Error(`unknown model ${String(body.model)}`);
  const out = validateRequest(model, body, String(body.model), { trustedUrlPrefixes: ['http://', 'https://'] });
  if (!out.ok) throw new Error(`invalid sample: ${out.violation.message}`);
  return out.value;
}

interface Seen {
  method: string;
  path: string;
  auth?: string;
  body: unknown;
}

describe('replicate adapter against the simulator (replicate mode)', () => {
  let server: Server;
  let base: string;
  let clock = Date.now();
  const seen: Seen[] = [];
  // the adapter as the workers and the edge get it: through the one registry
  const adapter = createUpstreamAdapters({ timeoutMs: 5000 }).getAdapter('replicate')!;
  const channel = (over: Partial<ChannelTarget> = {}): ChannelTarget => ({
    id: 'ch-r',
    name: 'replicate-sim',
    protocol: 'replicate',
    baseUrl: `${base}/replicate`,
    apiKey: KEY,
    modelMap: {},
    settings: {},
    ...over,
  });

  beforeAll(async () => {
    // the sim's public URL needs the port: listen first (recording what the vendor saw), then hand on to the sim app;
    // its own JSON parser skips a body already parsed here
    const holder: { sim?: express.Express } = {};
    const outer = express();
    outer.use('/replicate', express.json({ limit: '30mb' }), (req, _res, next) => {
      seen.push({ method: req.method, path: req.originalUrl, auth: req.header('authorization'), body: req.body as unknown });
      next();
    });
    outer.use((req, res, next) => holder.sim!(req, res, next));
    server = await new Promise<Server>((resolve) => {
      const s = outer.listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    holder.sim = createSimApp({ timeScale: 1, publicUrl: base, apiKey: KEY, now: () => clock });
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => (seen.length = 0));

  const rejection = async (p: Promise<unknown>): Promise<UpstreamError> => {
    const e = await p.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(UpstreamError);
    expect((e as Error).message).not.toContain(KEY);
    return e as UpstreamError;
  };

  it('submits an official model to /v1/models/{owner}/{name}/predictions with the bearer key and the translated input', async () => {
    const req = request({ model: 'lumen-2-pro', prompt: 'a red fox', size: '16:9', resolution: '1MP', output_format: 'png', seed: 7 });
    const ch = channel({ modelMap: { 'lumen-2-pro': 'black-forest-labs/flux-2-max' }, settings: { headers: { 'X-Org': 'o1' } } });
    const { upstreamTaskId } = await adapter.submit(ch, req, { taskId: 'task_ours' });
    expect(upstreamTaskId).toMatch(/^task_/);
    expect(seen).toEqual([
      {
        method: 'POST',
        path: '/replicate/v1/models/black-forest-labs/flux-2-max/predictions',
        auth: `Bearer ${KEY}`,
        body: {
          input: { prompt: 'a red fox', aspect_ratio: 'custom', width: 1344, height: 752, output_format: 'png', seed: 7, safety_tolerance: 2 },
        },
      },
    ]);
  });

  it('submits a pinned version to /v1/predictions with {version, input}', async () => {
    const version = 'bytedance/seedream-4:054cd8c667f535616fd66710ce20c8949bf64ac3d9a3459e338f026424be8bec';
    const req = request({ model: 'dream-5-0-pro', prompt: 'a lighthouse', size: '4:3', resolution: '2k', image_urls: [REF] });
    await adapter.submit(channel({ modelMap: { 'dream-5-0-pro': version } }), req, { taskId: 't' });
    expect(seen[0]).toMatchObject({
      path: '/replicate/v1/predictions',
      body: { version, input: { prompt: 'a lighthouse', aspect_ratio: '4:3', size: '2K', image_input: [REF] } },
    });
  });

  it('polls starting → processing → succeeded; the output link downloads the image, and is dead (403) an hour later', async () => {
    const req = request({ model: 'lumen-2-flex', prompt: 'a quiet harbour', size: '1:1', resolution: '1MP', output_format: 'png' });
    const ch = channel();
    const { upstreamTaskId } = await adapter.submit(ch, req, { taskId: 't' });
    expect(await adapter.poll(ch, upstreamTaskId, req)).toEqual({ status: 'pending', progress: 0 });
    clock += 1500;
    const mid = await adapter.poll(ch, upstreamTaskId, req);
    expect(mid.status).toBe('processing');
    expect(mid.progress).toBeGreaterThan(0);
    expect(mid.progress).toBeLessThan(100);
    clock += 60_000;
    const done = await adapter.poll(ch, upstreamTaskId, req);
    expect(done).toMatchObject({ status: 'completed', progress: 100, media: [{ kind: 'image', source: { url: expect.stringContaining('/vendor-files/') } }] });
    const url = (done.media![0]!.source as { url: string }).url;
    const file = await fetch(url);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('image/png');
    const bytes = Buffer.from(await file.arrayBuffer());
    expect(bytes.subarray(1, 4).toString()).toBe('PNG');
    expect(bytes.readUInt32BE(16)).toBe(1024); // IHDR width
    clock += 3_600_000;
    expect((await fetch(url)).status).toBe(403);
    // and the prediction's data is removed, as Replicate does after an hour
    expect(await adapter.poll(ch, upstreamTaskId, req)).toMatchObject({ status: 'failed', error: { message: expect.stringContaining('removed') } });
  });

  it('a failed prediction fails with its error; a flagged one is a moderation failure', async () => {
    const ch = channel();
    const fail = request({ model: 'dream-5-0-lite', prompt: 'x [sim:fail]' });
    const mod = request({ model: 'dream-5-0-lite', prompt: 'y [sim:moderation]' });
    const a = await adapter.submit(ch, fail, { taskId: 'a' });
    const b = await adapter.submit(ch, mod, { taskId: 'b' });
    clock += 60_000;
    expect(await adapter.poll(ch, a.upstreamTaskId, fail)).toMatchObject({ status: 'failed', error: { moderation: false } });
    expect(await adapter.poll(ch, b.upstreamTaskId, mod)).toMatchObject({
      status: 'failed',
      error: { moderation: true, message: expect.stringContaining('sensitive') },
    });
  });

  it('cancels: the prediction ends canceled (failed, type cancelled); a second cancel of the ended one is fine', async () => {
    const ch = channel();
    const req = request({ model: 'motion-1-0-pro-fast', prompt: 'waves', duration: 4, resolution: '720p' });
    const { upstreamTaskId } = await adapter.submit(ch, req, { taskId: 't' });
    await adapter.cancel!(ch, upstreamTaskId, req);
    expect(seen.at(-1)).toMatchObject({ method: 'POST', path: `/replicate/v1/predictions/${upstreamTaskId}/cancel`, auth: `Bearer ${KEY}` });
    clock += 60_000;
    expect(await adapter.poll(ch, upstreamTaskId, req)).toMatchObject({ status: 'failed', error: { type: 'cancelled' } });
    await expect(adapter.cancel!(ch, upstreamTaskId, req)).resolves.toBeUndefined();
  });

  it('a 429 is a retryable quota error carrying Retry-After; the retry is accepted', async () => {
    const ch = channel();
    const req = request({ model: 'lumen-2-pro', prompt: `busy ${clock} [sim:429once]` });
    const e = await rejection(adapter.submit(ch, req, { taskId: 't' }));
    expect({ retryable: e.retryable, kind: e.kind, status: e.status, retryAfterMs: e.retryAfterMs }).toEqual({
      retryable: true,
      kind: 'quota',
      status: 429,
      retryAfterMs: 1000,
    });
    await expect(adapter.submit(ch, req, { taskId: 't' })).resolves.toMatchObject({ upstreamTaskId: expect.stringMatching(/^task_/) });
  });

  it('a wrong key is the vendor 401 (a channel problem: retryable, another channel may serve); an unknown task is 404', async () => {
    const req = request({ model: 'lumen-2-pro', prompt: 'a cat' });
    const e = await rejection(adapter.submit(channel({ apiKey: 'r8_wrong' }), req, { taskId: 't' }));
    expect({ status: e.status, kind: e.kind }).toEqual({ status: 401, kind: 'channel' });
    const nf = await rejection(adapter.poll(channel(), 'task_nope', req));
    expect({ status: nf.status, retryable: nf.retryable }).toEqual({ status: 404, retryable: false });
  });

  it('refuses before any call what Replicate cannot carry, naming the field (and a mapped name that is no Replicate model)', async () => {
    const ch = channel();
    const n4 = request({ model: 'dream-5-0-lite', prompt: 'p', n: 4 });
    expect(adapter.check!(ch, n4)).toMatchObject({ field: 'n' });
    const wide = request({ model: 'lumen-2-pro', prompt: 'p', size: '16:9', resolution: '4MP' });
    expect(adapter.check!(ch, wide)).toMatchObject({ field: 'resolution' });
    const silent = request({ model: 'wave2.6-i2v-flash', prompt: 'p', image_urls: [REF], audio: false });
    expect(adapter.check!(ch, silent)).toMatchObject({ field: 'audio' });
    const plain = request({ model: 'lumen-2-pro', prompt: 'p' });
    expect(adapter.check!(channel({ modelMap: { 'lumen-2-pro': 'flux-2-pro' } }), plain)).toMatchObject({
      field: 'model',
      message: expect.stringContaining('owner/name'),
    });
    const e = await rejection(adapter.submit(ch, n4, { taskId: 't' }));
    expect(e.retryable).toBe(false);
    expect(seen).toEqual([]);
    expect(adapter.checkSettings!({ headers: {}, region: 'eu' })).toMatchObject({ field: 'region' });
    expect(adapter.translation?.protocol).toBe('replicate');
  });

  // one valid sample per family row: the table turns it into an input the model's schema accepts
  const SAMPLES: Record<string, Record<string, unknown>> = {
    'lumen-2-flex': { prompt: 'p', size: '3:2', resolution: '2MP', image_urls: [REF], steps: 20, guidance: 3, prompt_upsampling: true, seed: 1 },
    'lumen-2-pro': { prompt: 'p', width: 1024, height: 768, output_format: 'webp', safety_tolerance: 4 },
    'lumen-2-max': { prompt: 'p', size: 'auto', image_urls: [REF], resolution: '4MP' },
    'dream-5-0-pro': { prompt: 'p', size: '21:9', resolution: '4K', image_urls: [REF] },
    'dream-5-0-lite': { prompt: 'p', size: '9:16', resolution: '1k', n: 1 },
    'motion-1-0-pro-quality': { prompt: 'p', image_urls: [REF, REF], duration: 12, resolution: '1080p', aspect_ratio: '9:16' },
    'motion-1-0-pro-fast': { prompt: 'p', image_urls: [REF], duration: 2, aspect_ratio: '1:1' },
    'wave2.6-i2v-flash': {
      prompt: 'p',
      image_urls: [REF],
      negative_prompt: 'blur',
      duration: 10,
      audio_url: 'https://example.com/a.mp3',
      prompt_extend: false,
      seed: 3,
    },
  };

  it('covers every family row with a sample', () => {
    const rows = adapter.translation!.families.flatMap((f) => f.models);
    expect(Object.keys(SAMPLES).sort()).toEqual([...rows].sort());
  });

  it.each(Object.entries(SAMPLES))('%s: the translated sample is accepted by the model schema', async (model, body) => {
    const req = request({ model, ...body });
    expect(adapter.check!(channel(), req)).toBeUndefined();
    const { upstreamTaskId } = await adapter.submit(channel(), req, { taskId: 't' });
    expect(upstreamTaskId).toMatch(/^task_/);
  });

  it('the simulator refuses our own (untranslated) body with the 422 problem of Replicate, naming the fields', async () => {
    const req = request({ model: 'lumen-2-pro', prompt: 'p', size: '16:9', resolution: '2MP' });
    const res = await fetch(`${base}/replicate/v1/models/black-forest-labs/flux-2-pro/predictions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ input: req.upstreamBody }),
    });
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    const problem = (await res.json()) as { title: string; status: number; invalid_fields: { field: string }[] };
    expect(problem).toMatchObject({ title: 'Input validation failed', status: 422 });
    expect(problem.invalid_fields.map((f) => f.field)).toEqual(expect.arrayContaining(['input', 'input.resolution']));
    const noAuth = await fetch(`${base}/replicate/v1/predictions/x`);
    expect(noAuth.status).toBe(401);
    expect(await noAuth.json()).toEqual({ title: 'Unauthenticated', detail: expect.any(String), status: 401 });
    const unknown = await adapter.submit(channel({ modelMap: { 'lumen-2-pro': 'nobody/nothing' } }), req, { taskId: 't' }).then(
      () => undefined,
      (e: unknown) => e as UpstreamError,
    );
    expect(unknown).toMatchObject({ status: 404, retryable: false });
  });
});
