import fc from 'fast-check';
import { artgenAction } from './artgen-billing';
import {
  ARTGEN_ACTION_TABLE,
  ARTGEN_PAN_DIRECTIONS,
  ARTGEN_PATH_ACTIONS,
  artgenButtons,
  artgenNativeAction,
  buildArtgenCustomId,
  isArtgenFollowUp,
  isArtgenPanVersion,
  parseArtgenCustomId,
  type ArtgenCustomIdAction,
} from './artgen-custom-id';

describe('art suite customId grammar', () => {
  it.each([
    ['MJ::JOB::upsample::1::abc', { action: 'upscale', hash: 'abc', index: 1 }],
    ['MJ::JOB::upsample::4::abc', { action: 'upscale', hash: 'abc', index: 4 }],
    ['MJ::JOB::variation::2::abc', { action: 'variation', hash: 'abc', index: 2 }],
    ['MJ::JOB::reroll::0::abc::SOLO', { action: 'reroll', hash: 'abc' }],
    ['MJ::JOB::high_variation::1::abc::SOLO', { action: 'high-variation', hash: 'abc', index: 1 }],
    ['MJ::JOB::low_variation::1::abc::SOLO', { action: 'low-variation', hash: 'abc', index: 1 }],
    ['MJ::Inpaint::1::abc::SOLO', { action: 'inpaint', hash: 'abc' }],
    ['MJ::Outpaint::50::1::abc::SOLO', { action: 'zoom', hash: 'abc', zoom_ratio: 2 }],
    ['MJ::Outpaint::75::1::abc::SOLO', { action: 'zoom', hash: 'abc', zoom_ratio: 1.5 }],
    ['MJ::JOB::pan_left::1::abc::SOLO', { action: 'pan', hash: 'abc', direction: 'left' }],
    ['MJ::JOB::pan_down::1::abc::SOLO', { action: 'pan', hash: 'abc', direction: 'down' }],
    ['MJ::JOB::remix_strong::3::abc::SOLO', { action: 'remix-strong', hash: 'abc', index: 3 }],
    ['MJ::JOB::remix_subtle::1::abc::SOLO', { action: 'remix-subtle', hash: 'abc', index: 1 }],
  ])('parses %s and builds it back', (customId, expected) => {
    const parsed = parseArtgenCustomId(customId);
    expect(parsed).toEqual(expected);
    expect(buildArtgenCustomId(parsed!)).toBe(customId);
  });

  it.each([
    'MJ::JOB::upsample::5::abc',
    'MJ::JOB::upsample::0::abc',
    'MJ::JOB::upsample::1::abc::SOLO',
    'MJ::JOB::reroll::1::abc::SOLO',
    'MJ::JOB::reroll::0::abc',
    'MJ::JOB::pan_sideways::1::abc::SOLO',
    'MJ::Outpaint::60::1::abc::SOLO',
    'MJ::Inpaint::2::abc::SOLO',
    'MJ::JOB::variation::1::a b',
    'MJ::JOB::variation::1::',
    'XX::JOB::variation::1::abc',
    'MJ::JOB::explode::1::abc::SOLO',
    '',
    42,
    undefined,
  ])('refuses %p', (customId) => {
    expect(parseArtgenCustomId(customId)).toBeUndefined();
  });

  it('refuses to build a customId for an action without a button', () => {
    expect(() => buildArtgenCustomId({ action: 'imagine', hash: 'abc' })).toThrow('no customId');
    expect(() => buildArtgenCustomId({ action: 'zoom', hash: 'abc', zoom_ratio: 1.7 })).toThrow('no zoom button');
    expect(() => buildArtgenCustomId({ action: 'upscale', hash: 'a::b' })).toThrow('hash');
  });

  it('shows U1–U4, reroll and V1–V4 on a grid', () => {
    const buttons = artgenButtons('imagine', 'h1');
    expect(buttons.map((b) => b.label)).toEqual(['U1', 'U2', 'U3', 'U4', '🔄', 'V1', 'V2', 'V3', 'V4']);
    expect(buttons[0].customId).toBe('MJ::JOB::upsample::1::h1');
    expect(buttons[4].customId).toBe('MJ::JOB::reroll::0::h1::SOLO');
    expect(buttons[6].customId).toBe('MJ::JOB::variation::2::h1');
  });

  it('shows vary, zoom and (only when pan-capable) pan buttons on a single image', () => {
    const plain = artgenButtons('upscale', 'h2').map((b) => b.label);
    expect(plain).toEqual(['Vary (Strong)', 'Vary (Subtle)', 'Vary (Region)', 'Zoom Out 2x', 'Zoom Out 1.5x']);
    const pan = artgenButtons('pan', 'h2', { panCapable: true });
    expect(pan.map((b) => b.label).slice(5)).toEqual(['⬅️', '➡️', '⬆️', '⬇️']);
    expect(pan.map((b) => parseArtgenCustomId(b.customId)?.action)).toEqual([
      'high-variation',
      'low-variation',
      'inpaint',
      'zoom',
      'zoom',
      'pan',
      'pan',
      'pan',
      'pan',
    ]);
  });

  it('shows no buttons for describe and video', () => {
    expect(artgenButtons('describe', 'h')).toEqual([]);
    expect(artgenButtons('video', 'h')).toEqual([]);
  });

  it('names native actions in upper case with underscores', () => {
    expect(artgenNativeAction('high-variation')).toBe('HIGH_VARIATION');
    expect(artgenNativeAction('imagine')).toBe('IMAGINE');
    expect(ARTGEN_PATH_ACTIONS).toHaveLength(16);
  });

  it('offers pan only on v6, v6.1, v7, v8.1, v8.2 and altstyle6', () => {
    expect(['v6', 'v6.1', 'v7', 'v8.1', 'v8.2', 'altstyle6'].every(isArtgenPanVersion)).toBe(true);
    expect(['v5.2', 'v5.1', 'altstyle7', undefined].some(isArtgenPanVersion)).toBe(false);
  });
});

describe('the art action table', () => {
  const HASHES = fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/).filter((h) => h !== 'SOLO');
  /** What each slot of a customId template may hold (its field in the parsed action). */
  const SLOT_VALUES: Record<string, fc.Arbitrary<Partial<ArtgenCustomIdAction>>> = {
    index: fc.integer({ min: 1, max: 4 }).map((index) => ({ index })),
    'index=1': fc.constant({ index: 1 }),
    zoom_ratio: fc.constantFrom(2, 1.5).map((zoom_ratio) => ({ zoom_ratio })),
    direction: fc.constantFrom(...ARTGEN_PAN_DIRECTIONS).map((direction) => ({ direction })),
    hash: HASHES.map((hash) => ({ hash })),
  };
  const withButtons = ARTGEN_PATH_ACTIONS.filter((a) => 'customId' in ARTGEN_ACTION_TABLE[a]);

  it.each(withButtons.map((a) => [a]))('parse(build(x)) = x for every %s button', (action) => {
    const template = (ARTGEN_ACTION_TABLE[action] as { customId: string }).customId;
    const slots = [...template.matchAll(/\{([a-z_=0-9]+)\}/g)].map((m) => SLOT_VALUES[m[1]!]!);
    const specs = fc.tuple(...slots).map((parts) => Object.assign({ action }, ...parts) as ArtgenCustomIdAction);
    fc.assert(
      fc.property(specs, (x) => {
        const id = buildArtgenCustomId(x);
        expect(parseArtgenCustomId(id)).toEqual(x);
        expect(id.length).toBeLessThanOrEqual(200);
      }),
    );
  });

  it('has a button for every follow-up but modal, and none for an action that starts from nothing', () => {
    expect(withButtons).toEqual(ARTGEN_PATH_ACTIONS.filter((a) => isArtgenFollowUp(a) && a !== 'modal'));
  });

  it('spells every action once per vocabulary: API name, price key, native label, customId', () => {
    const rows = Object.values(ARTGEN_ACTION_TABLE);
    for (const spelling of ['billing', 'native'] as const) expect(new Set(rows.map((r) => r[spelling])).size).toBe(rows.length);
    expect(new Set(withButtons.map((a) => (ARTGEN_ACTION_TABLE[a] as { customId: string }).customId)).size).toBe(withButtons.length);
    for (const a of ARTGEN_PATH_ACTIONS) expect(artgenAction(a)).toBe(ARTGEN_ACTION_TABLE[a].billing);
  });
});
