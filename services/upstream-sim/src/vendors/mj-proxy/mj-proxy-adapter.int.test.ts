import { randomUUID } from 'node:crypto';
import sharp from 'sharp';
import { ARTGEN_CONTRACTS, applyArtgenParent, type ArtgenParentFacts, type ArtgenPathAction, type NormalizedRequest } from '@gmg/contracts';
import { createUpstreamAdapters, type ChannelTarget, type QuadrantCutter, type UpstreamAdapter, type UpstreamPoll } from '@gmg/upstream';
import { failure, listenVendorSim, type VendorSim } from '../vendor-sim.test-kit';

/**
 * The `mj-proxy` adapter against the simulator's strict midjourney-proxy mode (/mj-proxy) on a loopback port; the
 * simulator's clock is the test's (wall time plus an offset the test moves) at its real pace, so a task ends when the
 * test moves the clock, never on its own while a slow machine runs the test.
 */
const KEY = 'mj-proxy-sim-secret-7';
let offset = 0;
const now = () => Date.now() + offset;
let sim: VendorSim;
/** The art worker's cutter stands here as a recorder: what it was given, four marked tiles back (its own test: worker-artgen). */
const cutterSaw: Buffer[] = [];
const TILE = (i: number) => Buffer.from(`tile-${i}`);
const recordingCutter: QuadrantCutter = (image) => {
  cutterSaw.push(image);
  return Promise.resolve({ tiles: [0, 1, 2, 3].map(TILE), width: 32, height: 24 });
};
const adapter: UpstreamAdapter = createUpstreamAdapters({ timeoutMs: 5000, cutQuadrants: recordingCutter }).getAdapter('mj-proxy')!;
let mask: string;

const channel = (over: Partial<ChannelTarget> = {}): ChannelTarget => ({ ...sim.channel, ...over });
const unique = (s: string) => `${s} ${randomUUID().slice(0, 8)}`;

function normalized(
  action: ArtgenPathAction,
  body: Record<string, unknown>,
  parent?: { action: string; upstreamId: string; version?: string },
): NormalizedRequest {
  const out = ARTGEN_CONTRACTS[action].validate(body, 'artgen', { trustedUrlPrefixes: ['https://', `${sim.origin}/`] });
  if (!out.ok) throw new Error(out.violation.message);
  if (!parent) return out.value;
  const facts: ArtgenParentFacts = {
    action: parent.action,
    version: parent.version ?? 'v7',
    status: 'completed',
    imageCount: parent.action === 'upscale' ? 1 : 4,
  };
  const applied = applyArtgenParent(out.value, action === 'modal' ? { ...facts, action: 'inpaint', status: 'processing', nativeStatus: 'MODAL' } : facts);
  if (!applied.ok) throw new Error(applied.violation.message);
  // what pinToSourceTask does at the edge: the parent's upstream id in place of our task id
  return { ...applied.value, upstreamBody: { ...applied.value.upstreamBody, task_id: parent.upstreamId } };
}

const submit = (req: NormalizedRequest, ch = channel()) => adapter.submit(ch, req, { taskId: 'task_ours' });
const pollLater = (id: string, ms = 600_000): Promise<UpstreamPoll> => {
  offset += ms;
  return adapter.poll(channel(), id);
};
const mjPosts = async () => (await sim.seen()).filter((r) => r.method === 'POST' && r.path.startsWith('/mj-proxy'));
const lastPost = async () => (await mjPosts()).at(-1)!;
const urlOf = (m: NonNullable<UpstreamPoll['media']>[number]) => ('url' in m.source ? m.source.url : '');

/** An imagine run to its end; its upstream id. */
async function finishedImagine(prompt = unique('a fox')) {
  const { upstreamTaskId } = await submit(normalized('imagine', { prompt }));
  const done = await pollLater(upstreamTaskId);
  expect(done.status).toBe('completed');
  return { id: upstreamTaskId, done };
}

beforeAll(async () => {
  sim = await listenVendorSim('mj-proxy', { apiKey: KEY, now, timeScale: 1 });
  const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#fff' } })
    .png()
    .toBuffer();
  mask = `data:image/png;base64,${png.toString('base64')}`;
});
afterAll(() => sim.close());

describe('mj-proxy adapter against upstream-sim /mj-proxy', () => {
  it('imagine: the speed prefix, mj-api-secret, flags from structured fields, image prompts first; then the tiles and grid to keep', async () => {
    const prompt = unique('a red fox');
    const req = normalized('imagine', { prompt, size: '3:2', speed: 'fast', image_urls: ['https://cdn.example.com/ref.png'], metadata: { order: 'A-17' } });
    const { upstreamTaskId } = await submit(req, channel({ settings: { headers: { 'x-trace': 't1' } } }));
    expect(upstreamTaskId).toMatch(/^grid:\d+$/);
    const post = await lastPost();
    expect(post.path).toBe('/mj-proxy/mj-fast/mj/submit/imagine');
    expect(post.headers['mj-api-secret']).toBe(KEY);
    expect(post.headers.authorization).toBeUndefined();
    expect(post.headers['x-trace']).toBe('t1');
    expect(post.body).toEqual({ botType: 'MID_JOURNEY', prompt: `https://cdn.example.com/ref.png ${prompt} --ar 3:2 --v 7`, state: '{"order":"A-17"}' });

    const early = await adapter.poll(channel(), upstreamTaskId);
    expect(['pending', 'processing']).toContain(early.status);
    expect(JSON.stringify(early.native)).not.toMatch(/http/);
    const done = await pollLater(upstreamTaskId);
    expect(done.status).toBe('completed');
    expect(done.media).toHaveLength(4);
    for (const m of done.media!) expect(urlOf(m)).toMatch(new RegExp(`^${sim.origin}/vendor-files/\\d+/art-`));
    expect(done.nativeMedia?.grid_image_url).toMatchObject({ kind: 'image', source: { url: expect.stringContaining('-grid-') } });
    // the proxy's links and buttons never reach the native view
    expect(done.native).toEqual({ status: 'SUCCESS' });
  });

  it('sends the key as a Bearer token when the channel says auth: bearer; checkSettings refuses another auth word', async () => {
    await submit(normalized('imagine', { prompt: unique('a cat'), version: '6.1', alt_style: true }), channel({ settings: { auth: 'bearer' } }));
    const post = await lastPost();
    expect(post.path).toBe('/mj-proxy/mj/submit/imagine');
    expect(post.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(post.headers['mj-api-secret']).toBeUndefined();
    expect(post.body).toMatchObject({ botType: 'NIJI_JOURNEY', prompt: expect.stringMatching(/ --niji 6$/) });
    expect(adapter.checkSettings!({ auth: 'basic' })).toMatchObject({ field: 'auth' });
    expect(adapter.checkSettings!({ body: { notifyHook: 'https://x' } })).toMatchObject({ field: 'body.notifyHook' });
    expect(adapter.checkSettings!({ auth: 'bearer', body: { accountFilter: { modes: ['FAST'] } } })).toBeUndefined();
  });

  it("U2 → Zoom Out 1.5x → Vary (Region) + modal: each presses the proxy's own button, read from the parent", async () => {
    const grid = await finishedImagine();
    const proxyId = grid.id.split(':')[1]!;
    const up = await submit(normalized('upscale', { task_id: 'task_parent1', index: 2 }, { action: 'imagine', upstreamId: grid.id }));
    expect(up.upstreamTaskId).toMatch(/^single:\d+$/);
    const gets = (await sim.seen()).filter((r) => r.method === 'GET' && r.path === `/mj-proxy/mj/task/${proxyId}/fetch`);
    expect(gets.length).toBeGreaterThan(0);
    const action = await lastPost();
    expect(action.path).toBe('/mj-proxy/mj/submit/action');
    expect(action.body).toEqual({ taskId: proxyId, customId: expect.stringMatching(/^MJ::JOB::upsample::2::[0-9a-f-]{36}$/) });
    const single = await pollLater(up.upstreamTaskId);
    expect(single).toMatchObject({ status: 'completed', media: [{ kind: 'image', width: expect.any(Number) }] });
    expect(single.nativeMedia).toBeUndefined();

    const zoom = await submit(normalized('zoom', { task_id: 'task_parent2', zoom_ratio: 1.5 }, { action: 'upscale', upstreamId: up.upstreamTaskId }));
    expect((await lastPost()).body).toMatchObject({ customId: expect.stringMatching(/^MJ::Outpaint::75::1::[0-9a-f-]{36}::SOLO$/) });
    expect((await pollLater(zoom.upstreamTaskId)).media).toHaveLength(4);

    const inpaint = await submit(normalized('inpaint', { task_id: 'task_parent3' }, { action: 'upscale', upstreamId: up.upstreamTaskId }));
    expect((await lastPost()).body).toMatchObject({ customId: expect.stringMatching(/^MJ::Inpaint::1::[0-9a-f-]{36}::SOLO$/) });
    const waiting = await pollLater(inpaint.upstreamTaskId);
    expect(waiting).toMatchObject({ status: 'processing', native: { status: 'MODAL' } });

    const modal = await submit(
      normalized('modal', { task_id: 'task_parent4', prompt: 'a red hat', mask_url: mask }, { action: 'inpaint', upstreamId: inpaint.upstreamTaskId }),
    );
    expect(modal.upstreamTaskId).toBe(inpaint.upstreamTaskId);
    const modalPost = await lastPost();
    expect(modalPost.path).toBe('/mj-proxy/mj/submit/modal');
    expect(modalPost.body).toEqual({ taskId: inpaint.upstreamTaskId.split(':')[1], prompt: 'a red hat', maskBase64: mask });
    expect((await pollLater(modal.upstreamTaskId)).media).toHaveLength(4);
  });

  it('codes: 24 is a moderation refusal, 23 (queue full) is retryable with a wait, a missing parent is final', async () => {
    const banned = await failure(submit(normalized('imagine', { prompt: unique('[sim:moderation] x') })));
    expect(banned).toMatchObject({ kind: 'moderation', retryable: false });
    const prompt = unique('[sim:429once] a boat');
    const full = await failure(submit(normalized('imagine', { prompt })));
    expect(full).toMatchObject({ kind: 'quota', retryable: true, retryAfterMs: expect.any(Number) });
    expect(await failure(submit(normalized('imagine', { prompt })))).toBeUndefined();
    const gone = await failure(submit(normalized('upscale', { task_id: 'task_p', index: 1 }, { action: 'imagine', upstreamId: 'grid:999' }), channel()));
    expect(gone).toMatchObject({ kind: 'not_found', retryable: false });
    expect(JSON.stringify(gone?.message)).not.toContain(KEY);
  });

  it("a grid without tile links (the Java proxy) goes to the art worker's cutter; its four tiles are kept inline with the grid", async () => {
    const before = cutterSaw.length;
    const { done } = await finishedImagine(unique('[sim:gridonly] a lake'));
    expect(cutterSaw.length).toBe(before + 1);
    const grid = done.nativeMedia!.grid_image_url!;
    const gridBytes = Buffer.from('base64' in grid.source ? grid.source.base64 : '', 'base64');
    // the cutter got the grid the proxy showed, and the tiles it cut are the task's media, in its order
    expect(cutterSaw.at(-1)!.equals(gridBytes)).toBe(true);
    expect((await sharp(gridBytes).metadata()).format).toBe('png');
    expect(done.media!.map((m) => ('base64' in m.source ? Buffer.from(m.source.base64, 'base64').toString() : ''))).toEqual(
      [0, 1, 2, 3].map((i) => `tile-${i}`),
    );
    expect(done.media!.every((m) => m.width === 32 && m.height === 24)).toBe(true);
  });

  it('a grid without tile links in a process without the cutter fails the task for good, saying why', async () => {
    const bare = createUpstreamAdapters({ timeoutMs: 5000 }).getAdapter('mj-proxy')!;
    const { upstreamTaskId } = await bare.submit(channel(), normalized('imagine', { prompt: unique('[sim:gridonly] a pond') }), { taskId: 'task_ours' });
    offset += 600_000;
    const e = await failure(bare.poll(channel(), upstreamTaskId));
    expect(e).toMatchObject({ retryable: false, message: expect.stringContaining('no image library to cut it') });
  });

  it('blend and describe download their links and send Base64; describe answers its text', async () => {
    // the simulator is on loopback: this adapter's host filter calls every host public
    const open = createUpstreamAdapters({ timeoutMs: 5000, publicHosts: { checkUrl: () => Promise.resolve({ kind: 'public' as const }) } }).getAdapter(
      'mj-proxy',
    )!;
    const link = `${sim.origin}/files/art-maskseed-64x64.png`;
    const submit = (req: NormalizedRequest) => open.submit(channel(), req, { taskId: 'task_ours' });
    const blend = await submit(normalized('blend', { image_urls: [link, link], dimensions: 'LANDSCAPE' }));
    const sent = (await lastPost()).body as { base64Array: string[] };
    expect(sent).toEqual({
      botType: 'MID_JOURNEY',
      base64Array: [expect.stringMatching(/^data:image\/png;base64,/), expect.any(String)],
      dimensions: 'LANDSCAPE',
    });
    const served = Buffer.from(await (await fetch(link)).arrayBuffer());
    expect(Buffer.from(sent.base64Array[0]!.split(',')[1]!, 'base64').equals(served)).toBe(true);
    expect((await pollLater(blend.upstreamTaskId)).media).toHaveLength(4);
    const describe = await submit(normalized('describe', { image_urls: [link] }));
    expect(describe.upstreamTaskId).toMatch(/^text:/);
    expect((await lastPost()).body).toEqual({ botType: 'MID_JOURNEY', base64: sent.base64Array[0] });
    const text = await pollLater(describe.upstreamTaskId);
    expect(text).toMatchObject({ status: 'completed', result: { text: expect.stringMatching(/\S/) }, native: { description: expect.any(String) } });
  });

  it('check names what the protocol cannot carry, before any money; a private mask link is refused at submit', async () => {
    const grid = { action: 'imagine', upstreamId: 'grid:1' };
    const up = { action: 'upscale', upstreamId: 'single:1' };
    const check = (req: NormalizedRequest) => adapter.check!(channel(), req);
    expect(check(normalized('zoom', { task_id: 'task_a', zoom_ratio: 1.7 }, up))).toMatchObject({ field: 'zoom_ratio' });
    expect(check(normalized('zoom', { task_id: 'task_a' }, grid))).toMatchObject({ field: 'task_id' });
    expect(check(normalized('variation', { task_id: 'task_a', index: 2, prompt: 'new' }, grid))).toMatchObject({ field: 'prompt' });
    expect(check(normalized('video', { image_urls: ['https://cdn.example.com/a.png'] }))).toMatchObject({ field: 'action' });
    expect(check(normalized('imagine', { prompt: 'x', extra_knob: 1 }))).toMatchObject({ field: 'extra_knob' });
    expect(check(normalized('zoom', { task_id: 'task_a', zoom_ratio: 1.5 }, up))).toBeUndefined();
    const upscale = await submit(normalized('upscale', { task_id: 'task_c', index: 1 }, { action: 'imagine', upstreamId: (await finishedImagine()).id }));
    expect((await pollLater(upscale.upstreamTaskId)).status).toBe('completed');
    const inpaint = await submit(normalized('inpaint', { task_id: 'task_b' }, { action: 'upscale', upstreamId: upscale.upstreamTaskId }));
    const refused = await failure(
      submit(
        normalized(
          'modal',
          { task_id: 'task_d', prompt: 'x', mask_url: `${sim.origin}/files/art-maskseed-64x64.png` },
          { action: 'inpaint', upstreamId: inpaint.upstreamTaskId },
        ),
      ),
    );
    expect(refused).toMatchObject({ retryable: false, message: expect.stringMatching(/not public|non-public/) });
  });
});
