import { ARTGEN_CONTRACTS, type ArtgenPathAction, type NormalizedRequest } from '@gmg/contracts';
import type { ChannelTarget } from '../../adapter';
import { mjImaginePrompt } from './mj-proxy.adapter';
import { proxyButtonFor } from './mj-proxy.buttons';
import type { MjMedia } from './mj-proxy.media';
import { mapMjTask } from './mj-proxy.status';

const req = (action: ArtgenPathAction, body: Record<string, unknown>): NormalizedRequest => {
  const out = ARTGEN_CONTRACTS[action].validate(body, 'artgen', { trustedUrlPrefixes: ['https://'] });
  if (!out.ok) throw new Error(out.violation.message);
  return out.value;
};
const ch = { name: 'mj', baseUrl: 'http://proxy.test' } as ChannelTarget;
/** The grid cutter is not reached by these polls (they carry tile links or fail first). */
const noMedia = {} as MjMedia;
const poll = (t: Record<string, unknown>, shape: 'grid' | 'single' | 'text' = 'grid') => mapMjTask({ id: '1', ...t }, shape, ch, noMedia, 'test');

describe('mj-proxy imagine prompt', () => {
  it('adds --ar and --v from the structured fields, image prompts first', () => {
    expect(mjImaginePrompt(req('imagine', { prompt: 'a fox', size: '16:9', image_urls: ['https://a.test/x.png'] }))).toBe(
      'https://a.test/x.png a fox --ar 16:9 --v 7',
    );
    expect(mjImaginePrompt(req('imagine', { prompt: 'a fox', version: '8.2' }))).toBe('a fox --v 8.2');
    expect(mjImaginePrompt(req('imagine', { prompt: 'a fox', version: '7', alt_style: true }))).toBe('a fox --niji 7');
  });

  it('leaves flags the prompt already has', () => {
    expect(mjImaginePrompt(req('imagine', { prompt: 'a fox --ar 3:2 --v 6.1', size: '3:2' }))).toBe('a fox --ar 3:2 --v 6.1');
    expect(mjImaginePrompt(req('imagine', { prompt: 'a fox --niji 6' }))).toBe('a fox --niji 6');
  });
});

describe("mj-proxy: the proxy's own button for an action", () => {
  const buttons = [
    { customId: 'MJ::JOB::upsample::1::aaaa-1' },
    { customId: 'MJ::JOB::upsample::2::aaaa-1' },
    { customId: 'MJ::Outpaint::50::1::aaaa-1::SOLO' },
    { customId: 'MJ::Outpaint::75::1::aaaa-1::SOLO' },
    { customId: 'MJ::JOB::pan_left::1::aaaa-1::SOLO' },
    { customId: 'MJ::CustomZoom::aaaa-1' },
  ];
  it('matches the index, the zoom ratio and the direction', () => {
    expect(proxyButtonFor('upscale', { derived: { index: 2 } }, buttons)).toBe('MJ::JOB::upsample::2::aaaa-1');
    expect(proxyButtonFor('zoom', { derived: {} }, buttons)).toBe('MJ::Outpaint::50::1::aaaa-1::SOLO');
    expect(proxyButtonFor('zoom', { derived: { zoomRatio: 1.5 } }, buttons)).toBe('MJ::Outpaint::75::1::aaaa-1::SOLO');
    expect(proxyButtonFor('pan', { derived: { direction: 'left' } }, buttons)).toBe('MJ::JOB::pan_left::1::aaaa-1::SOLO');
  });
  it('finds none for a button the parent does not show', () => {
    expect(proxyButtonFor('upscale', { derived: { index: 3 } }, buttons)).toBeUndefined();
    expect(proxyButtonFor('pan', { derived: { direction: 'up' } }, buttons)).toBeUndefined();
    expect(proxyButtonFor('inpaint', { derived: {} }, 'not a list')).toBeUndefined();
  });
});

describe('mj-proxy task statuses', () => {
  it('maps the waiting and running words, MODAL kept in the native state, progress from "46%"', async () => {
    expect(await poll({ status: 'NOT_START' })).toMatchObject({ status: 'pending', native: { status: 'SUBMITTED' } });
    expect(await poll({ status: 'IN_PROGRESS', progress: '46%' })).toMatchObject({ status: 'processing', progress: 46 });
    expect(await poll({ status: 'MODAL' })).toMatchObject({ status: 'processing', native: { status: 'MODAL' } });
  });

  it("reads a banned failReason as moderation; other reasons and CANCEL are neutral failures; the proxy's words stay out", async () => {
    expect(await poll({ status: 'FAILURE', failReason: 'Banned prompt detected' })).toMatchObject({ status: 'failed', error: { moderation: true } });
    expect(await poll({ status: 'FAILURE', failReason: '可能包含敏感词' })).toMatchObject({ error: { moderation: true } });
    const other = await poll({ status: 'FAILURE', failReason: 'discord instance 7 is down' });
    expect(other).toMatchObject({ status: 'failed', error: { message: 'Generation failed', moderation: false } });
    expect(JSON.stringify(other)).not.toContain('discord');
    expect(await poll({ status: 'CANCEL' })).toMatchObject({ status: 'failed', native: { fail_reason: 'Task cancelled upstream' } });
    await expect(poll({ status: 'WHATEVER' })).rejects.toMatchObject({ retryable: true });
  });

  it('hands the tiles and the grid over to be kept, never in native; describe answers its text and prompts', async () => {
    const tiles = [1, 2, 3, 4].map((i) => ({ url: `https://cdn.discordapp.test/${i}.png` }));
    const done = await poll({
      status: 'SUCCESS',
      imageUrl: 'https://cdn.discordapp.test/grid.png',
      imageUrls: tiles,
      buttons: [{ customId: 'MJ::JOB::upsample::1::x' }],
    });
    expect(done.media?.map((m) => ('url' in m.source ? m.source.url : ''))).toEqual(tiles.map((t) => t.url));
    expect(done.nativeMedia).toEqual({ grid_image_url: { kind: 'image', source: { url: 'https://cdn.discordapp.test/grid.png' } } });
    expect(done.native).toEqual({ status: 'SUCCESS' });
    const single = await poll({ status: 'SUCCESS', imageUrl: 'https://cdn.discordapp.test/u.png', width: 2048, height: 2048 }, 'single');
    expect(single.media).toEqual([{ kind: 'image', source: { url: 'https://cdn.discordapp.test/u.png' }, width: 2048, height: 2048 }]);
    const text = '1️⃣ a cat --ar 1:1\n\n2️⃣ a dog\n\n3️⃣ a fox\n\n4️⃣ an owl';
    expect(await poll({ status: 'SUCCESS', prompt: text }, 'text')).toMatchObject({
      result: { text },
      native: { status: 'SUCCESS', description: text, prompts: ['a cat --ar 1:1', 'a dog', 'a fox', 'an owl'] },
    });
    await expect(poll({ status: 'SUCCESS' }, 'single')).rejects.toMatchObject({ retryable: true });
  });
});
