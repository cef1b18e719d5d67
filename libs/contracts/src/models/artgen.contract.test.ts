import { ARTGEN_CONTRACTS, artgenVersionName } from './artgen.contract';
import { applyArtgenParent, type ArtgenParentFacts } from './artgen-parent';
import { parseArtgenFlags } from './artgen-flags';
import type { NormalizedRequest } from './types';

const ok = (action: keyof typeof ARTGEN_CONTRACTS, body: Record<string, unknown>): NormalizedRequest => {
  const r = ARTGEN_CONTRACTS[action].validate(body, 'artgen');
  if (!r.ok) throw new Error(`expected ${action} to accept ${JSON.stringify(body)}: ${r.violation.message}`);
  return r.value;
};
const refused = (action: keyof typeof ARTGEN_CONTRACTS, body: Record<string, unknown>) => {
  const r = ARTGEN_CONTRACTS[action].validate(body, 'artgen');
  if (r.ok) throw new Error(`expected ${action} to refuse ${JSON.stringify(body)}`);
  return r.violation;
};
const URL1 = 'https://cdn.example.com/a.png';
const URL2 = 'https://cdn.example.com/b.png';
const PARENT = 'task_abc123';

describe('art suite contracts', () => {
  it('imagine: prompt required, flags parsed into version, ratio and speed, upstream path per action', () => {
    const r = ok('imagine', { prompt: 'a cat --ar 16:9 --v 8.2 --fast' });
    expect(r.derived).toMatchObject({ action: 'imagine', version: 'v8.2', aspect: '16:9', speed: 'fast' });
    expect(r.billing[0].keys[0]).toBe('artgen@imagine-v8.2-fast');
    expect(r.upstreamPath).toBe('/v1/artgen/generations/imagine');
    expect(r.upstreamBody).toMatchObject({ prompt: 'a cat --ar 16:9 --v 8.2 --fast', size: '16:9' });
    expect(r.upstreamBody.model).toBeUndefined();
    expect(r.expected).toMatchObject({ kind: 'images', count: 4 });
    expect(refused('imagine', { size: '1:1' })).toMatchObject({ field: 'prompt', rule: 'required' });
  });

  it('imagine: structured fields and metadata are accepted; version defaults to 7; niji is the alternate style', () => {
    expect(ok('imagine', { prompt: 'x', size: '3:2', version: 'v6.1', speed: 'turbo', metadata: { a: 1 } }).derived).toMatchObject({
      version: 'v6.1',
      speed: 'turbo',
      aspect: '3:2',
    });
    expect(ok('imagine', { prompt: 'x' }).derived.version).toBe('v7');
    expect(ok('imagine', { prompt: 'x --niji 6' }).derived.version).toBe('altstyle6');
    expect(ok('imagine', { prompt: 'x', version: '7', alt_style: true }).billing[0].keys[0]).toBe('artgen@imagine-altstyle7');
  });

  it.each([
    [{ prompt: 'x --ar 16:9', size: '1:1' }, 'size'],
    [{ prompt: 'x --v 7', version: '8.2' }, 'version'],
    [{ prompt: 'x --turbo', speed: 'fast' }, 'speed'],
    [{ prompt: 'x --ar sixteen' }, 'prompt'],
    [{ prompt: 'x --ar 9:1' }, 'prompt'],
    [{ prompt: 'x --v' }, 'prompt'],
    [{ prompt: 'x', size: '0:1' }, 'size'],
    [{ prompt: 'x', version: '9' }, 'version'],
    [{ prompt: 'x', speed: 'slow' }, 'speed'],
    [{ prompt: 'x', model: 'artgen' }, 'model'],
    [{ prompt: '   ' }, 'prompt'],
  ])('imagine refuses %p naming %s', (body, field) => {
    expect(refused('imagine', body).field).toBe(field);
  });

  it('tolerates unknown structured fields (passed upstream); relax is omitted; version spellings normalize like --v', () => {
    expect(ok('upscale', { task_id: PARENT, index: 1, extra: { a: [1] } }).upstreamBody).toMatchObject({ extra: { a: [1] } });
    const relax = ok('imagine', { prompt: 'x', speed: 'relax' });
    expect({ speed: relax.derived.speed, upstream: relax.upstreamBody.speed, key: relax.billing[0].keys[0] }).toEqual({
      speed: undefined,
      upstream: undefined,
      key: 'artgen@imagine-v7',
    });
    expect(ok('imagine', { prompt: 'x', version: 'V8.0' }).upstreamBody.version).toBe('v8');
    expect(ok('imagine', { prompt: 'x', version: '6.1', alt_style: true }).upstreamBody).toMatchObject({ version: 'v6.1', alt_style: true });
    expect(ok('video', { image_urls: [URL1], speed: 'fast' }).billing[0].keys).toEqual(['artgen@video-v7', 'artgen@video', 'artgen']);
    expect(refused('video', { image_urls: [URL1], speed: 'turbo' }).field).toBe('speed');
  });

  it('blend: 2..4 images, no prompt, dimensions', () => {
    expect(ok('blend', { image_urls: [URL1, URL2] }).upstreamBody).toMatchObject({ dimensions: 'SQUARE' });
    expect(refused('blend', { image_urls: [URL1] })).toMatchObject({ field: 'image_urls', status: 400 });
    expect(refused('blend', { image_urls: [URL1, URL2, URL1, URL2, URL1] }).field).toBe('image_urls');
    expect(refused('blend', { image_urls: [URL1, URL2], prompt: 'x' }).field).toBe('prompt');
    expect(refused('blend', { image_urls: [URL1, URL2], dimensions: 'WIDE' }).field).toBe('dimensions');
    expect(refused('blend', { image_urls: ['http://127.0.0.1/a.png', URL2] }).field).toBe('image_urls.0');
  });

  it('describe: one image, text output', () => {
    const r = ok('describe', { image_urls: [URL1] });
    expect(r.expected.kind).toBe('text');
    expect(r.billing[0].keys).toContain('artgen@describe');
    expect(refused('describe', { image_urls: [] }).field).toBe('image_urls');
  });

  it('edits: prompt and image', () => {
    expect(ok('edits', { prompt: 'make it blue', image_urls: [URL1] }).expected.count).toBe(4);
    expect(refused('edits', { prompt: 'x' }).field).toBe('image_urls');
  });

  it('upscale: task_id and index 1..4 required', () => {
    const r = ok('upscale', { task_id: PARENT, index: 2 });
    expect(r.derived).toMatchObject({ action: 'upscale', index: 2, parentTaskId: PARENT });
    expect(r.expected).toMatchObject({ kind: 'images', count: 1 });
    expect(refused('upscale', { task_id: PARENT }).field).toBe('index');
    expect(refused('upscale', { task_id: PARENT, index: 0 }).field).toBe('index');
    expect(refused('upscale', { task_id: PARENT, index: 5 }).field).toBe('index');
    expect(refused('upscale', { task_id: 'nope', index: 1 }).field).toBe('task_id');
  });

  it('variation family, reroll and zoom take task_id; zoom_ratio is 1 < r ≤ 2', () => {
    for (const a of ['variation', 'high-variation', 'low-variation', 'reroll', 'zoom', 'inpaint'] as const) ok(a, { task_id: PARENT });
    expect(ok('zoom', { task_id: PARENT }).derived.zoomRatio).toBe(2);
    expect(ok('zoom', { task_id: PARENT, zoom_ratio: 1.5 }).derived.zoomRatio).toBe(1.5);
    expect(refused('zoom', { task_id: PARENT, zoom_ratio: 1 }).rule).toBe('server:zoom-ratio');
    expect(refused('zoom', { task_id: PARENT, zoom_ratio: 2.5 }).field).toBe('zoom_ratio');
  });

  it('pan: direction among left, right, up, down', () => {
    expect(ok('pan', { task_id: PARENT, direction: 'left' }).derived.direction).toBe('left');
    expect(refused('pan', { task_id: PARENT }).field).toBe('direction');
    expect(refused('pan', { task_id: PARENT, direction: 'sideways' }).field).toBe('direction');
  });

  it('modal: task_id, prompt and mask_url', () => {
    expect(ok('modal', { task_id: PARENT, prompt: 'a hat', mask_url: URL1 }).derived.action).toBe('modal');
    expect(refused('modal', { task_id: PARENT, prompt: 'a hat' }).field).toBe('mask_url');
    expect(refused('modal', { task_id: PARENT, mask_url: URL1 }).field).toBe('prompt');
  });

  it('video: image, motion, batch_size charged per video, fixed fast speed', () => {
    const r = ok('video', { image_urls: [URL1], motion: 'high', batch_size: 4 });
    expect(r.billing[0]).toMatchObject({ quantity: 4 });
    expect(r.expected).toMatchObject({ kind: 'videos', count: 4 });
    expect(ok('video', { image_urls: [URL1], resolution: '720p' }).billing[0].keys).toEqual(['artgen@video-720p-v7', 'artgen@video-720p', 'artgen']);
    expect(refused('video', { image_urls: [URL1], batch_size: 5 }).field).toBe('batch_size');
    expect(refused('video', { image_urls: [URL1], speed: 'turbo' }).field).toBe('speed');
    expect(refused('video', { prompt: 'x' }).field).toBe('image_urls');
  });

  it('remix: task_id and index', () => {
    expect(ok('remix-strong', { task_id: PARENT, index: 1 }).derived.action).toBe('remix-strong');
    expect(refused('remix-subtle', { task_id: PARENT }).field).toBe('index');
  });
});

describe('follow-ups against their parent', () => {
  const grid = (over: Partial<ArtgenParentFacts> = {}): ArtgenParentFacts => ({
    action: 'imagine',
    version: 'v7',
    status: 'completed',
    imageCount: 4,
    ...over,
  });
  const single = (over: Partial<ArtgenParentFacts> = {}): ArtgenParentFacts => grid({ action: 'upscale', imageCount: 1, ...over });
  const apply = (action: keyof typeof ARTGEN_CONTRACTS, body: Record<string, unknown>, parent: ArtgenParentFacts) =>
    applyArtgenParent(ok(action, { task_id: PARENT, ...body }), parent);

  it('inherits the parent version into the billing key chain', () => {
    const r = apply('upscale', { index: 1, speed: 'fast' }, grid({ version: 'v8.2' }));
    expect(r.ok && r.value.billing[0].keys[0]).toBe('artgen@upscale-v8.2-fast');
    expect(r.ok && r.value.derived.version).toBe('v8.2');
  });

  it('refuses an unfinished parent and an index beyond its images', () => {
    expect(apply('upscale', { index: 1 }, grid({ status: 'processing' }))).toMatchObject({
      ok: false,
      violation: { field: 'task_id', rule: 'server:parent-state' },
    });
    expect(apply('variation', { index: 2 }, single({ action: 'zoom', imageCount: 1 }))).toMatchObject({ ok: false, violation: { field: 'index' } });
  });

  it('pan needs a single image of a pan-capable version', () => {
    expect(apply('pan', { direction: 'left' }, single()).ok).toBe(true);
    expect(apply('pan', { direction: 'left' }, single({ action: 'pan' })).ok).toBe(true);
    expect(apply('pan', { direction: 'left' }, grid())).toMatchObject({ ok: false, violation: { rule: 'server:parent-kind' } });
    expect(apply('pan', { direction: 'left' }, single({ version: 'v5.2' }))).toMatchObject({ ok: false, violation: { rule: 'server:parent-version' } });
    expect(apply('pan', { direction: 'up' }, single({ version: 'altstyle7' })).ok).toBe(false);
    expect(apply('pan', { direction: 'up' }, single({ version: 'altstyle6' })).ok).toBe(true);
  });

  it('remix needs a v8.1 / v8.2 imagine parent', () => {
    expect(apply('remix-strong', { index: 1 }, grid({ version: 'v8.2' })).ok).toBe(true);
    expect(apply('remix-subtle', { index: 1 }, grid({ version: 'v8.1' })).ok).toBe(true);
    expect(apply('remix-strong', { index: 1 }, grid({ version: 'v7' }))).toMatchObject({ ok: false, violation: { rule: 'server:parent-version' } });
    expect(apply('remix-strong', { index: 1 }, grid({ action: 'variation', version: 'v8.2' }))).toMatchObject({
      ok: false,
      violation: { rule: 'server:parent-kind' },
    });
  });

  it('modal needs an inpaint task in MODAL', () => {
    const modal = grid({ action: 'inpaint', status: 'processing', nativeStatus: 'MODAL', imageCount: 0 });
    expect(apply('modal', { prompt: 'a hat', mask_url: URL1 }, modal).ok).toBe(true);
    expect(apply('modal', { prompt: 'a hat', mask_url: URL1 }, grid())).toMatchObject({ ok: false, violation: { status: 400, rule: 'server:parent-state' } });
    expect(apply('modal', { prompt: 'a hat', mask_url: URL1 }, { ...modal, nativeStatus: 'IN_PROGRESS' }).ok).toBe(false);
  });

  it('reroll and upscale need a grid; describe and video parents are refused', () => {
    expect(apply('reroll', {}, single()).ok).toBe(false);
    expect(apply('upscale', { index: 1 }, grid({ action: 'describe', imageCount: 0 })).ok).toBe(false);
    expect(apply('zoom', {}, single({ action: 'pan' })).ok).toBe(true);
    expect(apply('upscale', { index: 1 }, grid({ action: undefined })).ok).toBe(false);
  });
});

describe('prompt flags', () => {
  it('parses aspect, version, alternate style, speed and style; ignores unknown flags', () => {
    expect(parseArtgenFlags('a --ar 2:3 --v 6.1 --style raw --turbo --chaos 50')).toEqual({
      ok: true,
      flags: { aspect: '2:3', version: '6.1', style: 'raw', speed: 'turbo' },
    });
    expect(parseArtgenFlags('a --niji 6 --aspect 1:1')).toEqual({ ok: true, flags: { altStyle: true, altStyleVersion: '6', aspect: '1:1' } });
    expect(parseArtgenFlags('a --niji')).toEqual({ ok: true, flags: { altStyle: true } });
    expect(parseArtgenFlags('a --ar --v 7').ok).toBe(false);
  });

  it.each([
    ['8.2', false, 'v8.2'],
    ['v6', false, 'v6'],
    ['6', true, 'altstyle6'],
    ['7.0', false, 'v7'],
    ['altstyle7', false, 'altstyle7'],
    ['x', false, undefined],
  ])('version %p (alt %p) is %p', (raw, alt, name) => expect(artgenVersionName(raw as string, alt as boolean)).toBe(name));
});
