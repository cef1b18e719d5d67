import { ARTGEN_CONTRACTS, type ArtgenPathAction, type NormalizedRequest } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import { waitFor } from '@gmg/testing';
import { createGatewayAdapter, type ChannelTarget, type UpstreamPoll } from '@gmg/upstream';
import { listenSimChannel, type SimChannel } from '../sim-channel.test-kit';

const KEY = 'sim-art-channel-key';

/**
 * The protocol between the gateway and its art-suite upstream, from both real sides: the registry's art contracts
 * build the upstream request, the real gateway adapter sends and polls it, the sim answers over HTTP.
 */
function normalized(action: ArtgenPathAction, body: Record<string, unknown>): NormalizedRequest {
  const out = ARTGEN_CONTRACTS[action].validate(body, 'artgen', { trustedUrlPrefixes: ['https://'] });
  if (!out.ok) throw new Error(out.violation.message);
  return out.value;
}

describe('gateway adapter against the upstream-sim art suite (SIM_TIME_SCALE 0.05)', () => {
  let sim: SimChannel;
  let ch: ChannelTarget;
  const adapter = createGatewayAdapter({ timeoutMs: 5000 });
  let n = 0;

  beforeAll(async () => {
    sim = await listenSimChannel(KEY);
    ch = sim.channel;
  });
  afterAll(() => sim.close());

  const submit = async (action: ArtgenPathAction, body: Record<string, unknown>) => {
    const req = normalized(action, body);
    const { upstreamTaskId } = await adapter.submit(ch, req, { taskId: `task_gw${++n}` });
    return { req, id: upstreamTaskId };
  };
  const until = (t: { req: NormalizedRequest; id: string }, done: (p: UpstreamPoll) => boolean): Promise<UpstreamPoll> =>
    waitFor(
      async () => {
        const p = await adapter.poll(ch, t.id, t.req);
        return done(p) ? p : undefined;
      },
      { timeoutMs: 8000, what: `sim art task ${t.id}` },
    );
  const terminal = (p: UpstreamPoll) => p.status === 'completed' || p.status === 'failed';

  it('imagine → U2 → pan left twice: a grid of four tiles, then single images wider each time', async () => {
    const imagine = await submit('imagine', { prompt: 'a harbour at night --v 7' });
    const grid = await until(imagine, terminal);
    expect(grid).toMatchObject({ status: 'completed', native: { status: 'SUCCESS', action: 'IMAGINE', grid_image_url: expect.stringContaining('/files/') } });
    expect(grid.result?.images).toHaveLength(4);
    const upscale = await submit('upscale', { task_id: imagine.id, index: 2 });
    const up = await until(upscale, terminal);
    expect(up.result?.images).toHaveLength(1);
    const widths = [up.native?.width as number];
    let parent = { poll: up, id: upscale.id };
    for (const direction of ['left', 'left']) {
      const pan = await submit('pan', { task_id: parent.id, direction });
      parent = { poll: await until(pan, terminal), id: pan.id };
      widths.push(parent.poll.native?.width as number);
    }
    expect(parent.poll.status).toBe('completed');
    expect(widths[1]).toBeGreaterThan(widths[0]);
    expect(widths[2]).toBeGreaterThan(widths[1]);
  });

  it('inpaint shows MODAL (still running); modal on the same upstream id completes it', async () => {
    const imagine = await submit('imagine', { prompt: 'a garden' });
    await until(imagine, terminal);
    const inpaint = await submit('inpaint', { task_id: imagine.id, index: 1 });
    const waiting = await adapter.poll(ch, inpaint.id, inpaint.req);
    expect(waiting).toMatchObject({ status: 'processing', native: { status: 'MODAL' } });
    const modal = await submit('modal', { task_id: inpaint.id, prompt: 'a garden with a pond', mask_url: 'https://x.test/mask.png' });
    expect(modal.id).toBe(inpaint.id);
    const done = await until(modal, terminal);
    expect(done).toMatchObject({ status: 'completed', native: { prompt: 'a garden with a pond' } });
    expect(done.result?.images).toHaveLength(4);
  });

  it('describe and video: four prompts as text, batch_size MP4 links', async () => {
    const describe = await submit('describe', { image_urls: ['https://x.test/photo.png'] });
    const text = await until(describe, terminal);
    expect(text.result?.text?.split('\n\n')).toHaveLength(4);
    const video = await until(await submit('video', { image_urls: ['https://x.test/photo.png'], batch_size: 2, motion: 'high' }), terminal);
    expect(video.result?.videos).toHaveLength(2);
    expect(video.result?.videos?.[0].url[0]).toMatch(/\.mp4$/);
  });

  it('markers: moderation fails as moderation; error503 is a retryable submit error; an unknown parent is final', async () => {
    const mod = await until(await submit('imagine', { prompt: 'bad [sim:moderation]' }), terminal);
    expect(mod).toMatchObject({ status: 'failed', error: { message: 'Banned prompt detected', moderation: true } });
    const e503 = await submit('imagine', { prompt: 'down [sim:error503]' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(e503).toBeInstanceOf(UpstreamError);
    expect(e503).toMatchObject({ retryable: true, status: 503 });
    const lost = await submit('upscale', { task_id: 'task_gone', index: 1 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(lost).toMatchObject({ retryable: false, status: 404 });
  });
});
