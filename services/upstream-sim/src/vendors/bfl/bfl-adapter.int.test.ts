import { normalizedRequest } from '@gmg/testing';
import { readImageHeader } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import { createBflAdapter, type ChannelTarget, type UpstreamPoll } from '@gmg/upstream';
import { failure, listenVendorSim, type SeenRequest, type VendorSim } from '../vendor-sim.test-kit';

/**
 * The bfl adapter against the simulator's bfl mode over HTTP (loopback, port 0). Both share one injected clock, so a
 * task ends, and its 10-minute link dies, when the test moves the clock — no waiting on wall time.
 */
const KEY = 'bfl-key-0123456789';
const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const normalized = normalizedRequest;

type Seen = SeenRequest;

describe('bfl adapter against upstream-sim /bfl', () => {
  let clock = Date.now();
  let sim: VendorSim;
  let origin: string;
  let ch: ChannelTarget;
  const adapter = createBflAdapter({ timeoutMs: 5000, now: () => clock });

  beforeAll(async () => {
    sim = await listenVendorSim('bfl', { apiKey: KEY, now: () => clock, timeScale: 1, id: 'bfl1', name: 'bfl-sim' });
    ({ origin, channel: ch } = sim);
  });
  afterAll(async () => {
    await sim?.close();
  });

  const seen = (): Promise<Seen[]> => sim.seen();
  const submit = (body: Record<string, unknown>, channel = ch) => adapter.submit(channel, normalized(body), { taskId: 'task_ours' });
  /** Moves the clock past the task's simulated run, then polls. */
  const pollLater = (id: string, ms = 120_000): Promise<UpstreamPoll> => {
    clock += ms;
    return adapter.poll(ch, id);
  };

  it('posts the translated body to the mapped endpoint with x-key, and keeps the returned polling_url', async () => {
    const mapped = { ...ch, modelMap: { 'lumen-2-pro': 'flux-2-max' }, settings: { headers: { 'x-org': 'acme' } } };
    const { upstreamTaskId, done } = await submit({ model: 'lumen-2-pro', prompt: 'a lighthouse', resolution: '1MP', size: '3:2', seed: 5 }, mapped);
    expect(done).toBeUndefined();
    const ref = JSON.parse(upstreamTaskId) as { id: string; url: string };
    expect(ref.url).toBe(`${origin}/bfl/v1/get_result?id=${ref.id}`);
    const post = (await seen()).filter((r) => r.method === 'POST').at(-1)!;
    expect(post.path).toBe('/bfl/v1/flux-2-max');
    expect(post.headers['x-key']).toBe(KEY);
    expect(post.headers['x-org']).toBe('acme');
    expect(post.headers.authorization).toBeUndefined();
    expect(post.body).toEqual({
      prompt: 'a lighthouse',
      width: 1248,
      height: 832,
      seed: 5,
      output_format: 'jpeg',
      prompt_upsampling: false,
      safety_tolerance: 2,
    });
  });

  it('polls Pending to Ready: media whose link serves the image, and 403 once BFL’s 10 minutes are over', async () => {
    const { upstreamTaskId } = await submit({ model: 'lumen-2-flex', prompt: 'a fox', resolution: '1MP', size: '16:9', output_format: 'png', steps: 20 });
    expect((await adapter.poll(ch, upstreamTaskId)).status).toBe('pending');
    const done = await pollLater(upstreamTaskId, 60_000);
    expect(done).toMatchObject({ status: 'completed', progress: 100 });
    const url = done.media?.[0]?.source && 'url' in done.media[0].source ? done.media[0].source.url : '';
    expect(done.media).toEqual([{ kind: 'image', source: { url } }]);
    const file = await fetch(url);
    expect(file.status).toBe(200);
    expect(readImageHeader(Buffer.from(await file.arrayBuffer()))).toMatchObject({ format: 'png', width: 1344, height: 752 });
    clock += 10 * 60_000;
    expect((await fetch(url)).status).toBe(403);
  });

  it('ends a moderated task as a moderation failure, whichever side BFL flagged', async () => {
    for (const prompt of ['nope [sim:moderation]', 'nope [sim:request-moderated]']) {
      const { upstreamTaskId } = await submit({ model: 'lumen-2-pro', prompt });
      expect(await pollLater(upstreamTaskId)).toMatchObject({ status: 'failed', error: { moderation: true } });
    }
  });

  it('ends an Error task as failed with a neutral message', async () => {
    const { upstreamTaskId } = await submit({ model: 'lumen-2-max', prompt: 'x [sim:fail]' });
    expect(await pollLater(upstreamTaskId)).toEqual({ status: 'failed', progress: 0, error: { message: 'Generation failed' } });
  });

  it('reads Task not found as pending just after the submit, and as a final failure later', async () => {
    const ghost = JSON.stringify({ id: 'ghost', url: `${origin}/bfl/v1/get_result?id=ghost`, at: clock });
    expect(await adapter.poll(ch, ghost)).toEqual({ status: 'pending', progress: 0 });
    expect(await pollLater(ghost)).toMatchObject({ status: 'failed', error: { type: 'upstream_error' } });
  });

  it('answers a 429 as a retry after Retry-After, then the same submit goes through', async () => {
    const body = { model: 'lumen-2-pro', prompt: `busy ${clock} [sim:429once]` };
    const e = await failure(submit(body));
    expect(e).toBeInstanceOf(UpstreamError);
    expect({ retryable: e?.retryable, kind: e?.kind, status: e?.status, retryAfterMs: e?.retryAfterMs }).toEqual({
      retryable: true,
      kind: 'quota',
      status: 429,
      retryAfterMs: 1000,
    });
    expect((await submit(body)).upstreamTaskId).toContain('get_result');
  });

  it('refuses what FLUX.2 cannot honour before any call: steps on pro, a side that is not a multiple of 16', () => {
    const pro = normalized({ model: 'lumen-2-pro', prompt: 'x' });
    expect(adapter.check!(ch, { ...pro, upstreamBody: { ...pro.upstreamBody, steps: 20 } })?.field).toBe('steps');
    expect(adapter.check!(ch, normalized({ model: 'lumen-2-pro', prompt: 'x', width: 1000, height: 1000 }))?.field).toBe('width');
  });

  it('a wrong key fails over (channel), an endpoint BFL does not have is final', async () => {
    const badKey = await failure(submit({ model: 'lumen-2-pro', prompt: 'x' }, { ...ch, apiKey: 'wrong-key-999' }));
    expect({ status: badKey?.status, retryable: badKey?.retryable, kind: badKey?.kind }).toEqual({ status: 403, retryable: true, kind: 'channel' });
    expect(badKey?.message).not.toContain('wrong-key-999');
    const noSuch = await failure(submit({ model: 'lumen-2-pro', prompt: 'x' }, { ...ch, modelMap: { 'lumen-2-pro': 'flux-9-ultra' } }));
    expect({ status: noSuch?.status, retryable: noSuch?.retryable }).toEqual({ status: 404, retryable: false });
  });

  it("the simulator accepts each model's translated sample and refuses our untranslated body", async () => {
    const samples: Record<string, unknown>[] = ['lumen-2-flex', 'lumen-2-pro', 'lumen-2-max'].map((model) => ({
      model,
      prompt: `sample ${model}`,
      image_urls: ['https://img.example.com/a.png', `data:image/png;base64,${PNG_1PX}`],
      resolution: '2MP',
      size: '4:3',
      seed: 11,
      safety_tolerance: 5,
      prompt_upsampling: true,
      output_format: 'webp',
      ...(model === 'lumen-2-flex' ? { steps: 12, guidance: 7.5 } : {}),
    }));
    for (const body of samples) await expect(submit(body)).resolves.toHaveProperty('upstreamTaskId');
    const raw = await fetch(`${ch.baseUrl}/v1/flux-2-pro`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-key': KEY },
      body: JSON.stringify(normalized(samples[1]!).upstreamBody),
    });
    expect(raw.status).toBe(422);
    const detail = ((await raw.json()) as { detail: { loc: string[]; type: string }[] }).detail;
    expect(detail.map((d) => d.loc[1]).sort()).toEqual(['image_urls', 'model', 'n', 'resolution', 'size']);
    expect(new Set(detail.map((d) => d.type))).toEqual(new Set(['extra_forbidden']));
  });
});
