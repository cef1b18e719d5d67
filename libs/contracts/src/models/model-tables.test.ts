import { resolveModel } from './registry';

/** One valid body per model; each row below breaks one rule of the spec's tables. */
const U = 'https://cdn.example.com/a.png';
const V = 'https://cdn.example.com/v.mp4';
const BASE: Record<string, Record<string, unknown>> = {
  'pict-image-2': { prompt: 'p' },
  'spark-imagine-image-2.0': { prompt: 'p' },
  'spark-imagine-1.5-main': { prompt: 'p' },
  'dream-5-0-pro': { prompt: 'p' },
  'dream-5-0-lite': { prompt: 'p' },
  'pixel-v6': { prompt: 'p' },
  'Omni-Flash-Ext': { prompt: 'p' },
  'spark-imagine-1.5-video-main': { prompt: 'p' },
  'wave2.6-i2v-flash': { image_urls: [U] },
  'kinetic-video-o1': { prompt: 'p' },
  'clipq3-pro': { prompt: 'p' },
  'motion-1-0-pro-fast': { prompt: 'p' },
  'reel-v4-fast': { prompt: 'p' },
  'wave2.7-videoedit': { prompt: 'p', video_urls: [V] },
  'wave2.7-r2v': { prompt: 'p', image_with_roles: [{ url: U, role: 'reference_image' }] },
  'motion-2.0': { prompt: 'p', asset_urls: ['asset://abc'] },
};

type Row = [model: string, patch: Record<string, unknown>, field: string, status: number, type: string];
const IRE = 'invalid_request_error';
const ROWS: Row[] = [
  ['pict-image-2', { model: 'pict-image-3' }, 'model', 400, IRE],
  ['pict-image-2', { prompt: undefined }, 'prompt', 400, IRE],
  ['pict-image-2', { n: 0 }, 'n', 400, IRE],
  ['pict-image-2', { size: '7:5' }, 'size', 400, IRE],
  ['pict-image-2', { resolution: '8k' }, 'resolution', 400, IRE],
  ['pict-image-2', { image_urls: new Array(17).fill(U) }, 'image_urls', 400, IRE],
  ['spark-imagine-image-2.0', { model: 'spark-imagine-image-2' }, 'model', 400, IRE],
  ['spark-imagine-image-2.0', { nsfw_check: 'yes' }, 'nsfw_check', 400, IRE],
  ['spark-imagine-image-2.0', { prompt: '   ' }, 'prompt', 400, IRE],
  ['spark-imagine-image-2.0', { prompt: 'x'.repeat(8001) }, 'prompt', 400, IRE],
  ['spark-imagine-image-2.0', { n: 11 }, 'n', 400, IRE],
  ['spark-imagine-image-2.0', { aspect_ratio: '5:4' }, 'aspect_ratio', 400, IRE],
  ['spark-imagine-image-2.0', { resolution: '4k' }, 'resolution', 400, IRE],
  ['spark-imagine-image-2.0', { quality: 'high' }, 'quality', 400, IRE],
  ['spark-imagine-image-2.0', { quality: 'low', image_urls: [U] }, 'quality', 400, IRE],
  ['spark-imagine-image-2.0', { image_urls: [U, U, U, U] }, 'image_urls', 400, IRE],
  ['spark-imagine-image-2.0', { image_urls: [] }, 'image_urls', 400, IRE],
  ['spark-imagine-image-2.0', { image_urls: ['data:image/png;base64,AAAA'] }, 'image_urls.0', 400, IRE],
  ['spark-imagine-1.5-main', { size: '21:9' }, 'size', 400, IRE],
  ['dream-5-0-pro', { resolution: '3K' }, 'resolution', 400, IRE],
  ['dream-5-0-pro', { n: 2 }, 'n', 400, IRE],
  ['dream-5-0-lite', { n: 5 }, 'n', 400, IRE],
  ['pixel-v6', { prompt: 'x'.repeat(5001) }, 'prompt', 400, IRE],
  ['pixel-v6', { resolution: '480p' }, 'resolution', 400, IRE],
  ['pixel-v6', { duration: 16 }, 'duration', 400, IRE],
  ['pixel-v6', { duration: 6, first_frame_image: U, last_frame_image: U }, 'duration', 400, IRE],
  ['pixel-v6', { size: '5:4' }, 'size', 400, IRE],
  ['pixel-v6', { seed: 2147483648 }, 'seed', 400, IRE],
  ['pixel-v6', { negative_prompt: 'x'.repeat(2049) }, 'negative_prompt', 400, IRE],
  ['pixel-v6', { audio: 'true' }, 'audio', 400, IRE],
  ['pixel-v6', { watermark: 1 }, 'watermark', 400, IRE],
  ['pixel-v6', { motion_mode: 'fast' }, 'motion_mode', 400, IRE],
  ['pixel-v6', { generate_multi_clip_switch: true, img_references: [U] }, 'generate_multi_clip_switch', 400, IRE],
  ['pixel-v6', { image_urls: ['data:image/png;base64,AAAA'] }, 'image_urls.0', 400, IRE],
  ['pixel-v6', { first_frame_image: U }, 'last_frame_image', 400, IRE],
  ['pixel-v6', { img_references: new Array(8).fill(U) }, 'img_references', 400, IRE],
  ['pixel-v6', { extend_from_task_id: 'abc' }, 'extend_from_task_id', 400, IRE],
  ['Omni-Flash-Ext', { model: 'omni-flash-ext' }, 'model', 400, IRE],
  ['Omni-Flash-Ext', { prompt: '' }, 'prompt', 400, IRE],
  ['Omni-Flash-Ext', { duration: 5 }, 'duration', 400, 'invalid_duration'],
  ['Omni-Flash-Ext', { duration: 6, video_urls: [V] }, 'duration', 400, 'invalid_duration'],
  ['Omni-Flash-Ext', { resolution: '2k' }, 'resolution', 400, 'invalid_resolution'],
  ['Omni-Flash-Ext', { aspect_ratio: '1:1' }, 'aspect_ratio', 400, IRE],
  ['Omni-Flash-Ext', { aspect_ratio: '16:9', size: '9:16' }, 'size', 400, IRE],
  ['Omni-Flash-Ext', { image_urls: [U, U] }, 'image_urls', 400, 'unsupported_image_count'],
  ['Omni-Flash-Ext', { video_urls: [V, V] }, 'video_urls', 400, 'unsupported_video_count'],
  ['spark-imagine-1.5-video-main', { prompt: undefined }, 'prompt', 400, IRE],
  ['spark-imagine-1.5-video-main', { size: '4:3' }, 'size', 400, IRE],
  ['spark-imagine-1.5-video-main', { duration: '6' }, 'duration', 400, IRE],
  ['spark-imagine-1.5-video-main', { duration: 5 }, 'duration', 400, IRE],
  ['spark-imagine-1.5-video-main', { resolution: '1080p' }, 'resolution', 400, IRE],
  ['spark-imagine-1.5-video-main', { image_urls: new Array(8).fill(U) }, 'image_urls', 400, IRE],
  ['spark-imagine-1.5-video-main', { image_urls: ['iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB'] }, 'image_urls.0', 400, IRE],
  ['wave2.6-i2v-flash', { image_urls: undefined }, 'image_urls', 400, IRE],
  ['wave2.6-i2v-flash', { image_urls: [U, U] }, 'image_urls', 400, IRE],
  ['wave2.6-i2v-flash', { negative_prompt: 'x'.repeat(501) }, 'negative_prompt', 400, IRE],
  ['wave2.6-i2v-flash', { resolution: '480p' }, 'resolution', 400, IRE],
  ['wave2.6-i2v-flash', { duration: 1 }, 'duration', 400, IRE],
  ['wave2.6-i2v-flash', { audio: 'false' }, 'audio', 400, IRE],
  ['wave2.6-i2v-flash', { audio_url: 'ftp://x.example.com/a.mp3' }, 'audio_url', 400, IRE],
  ['wave2.6-i2v-flash', { prompt_extend: 0 }, 'prompt_extend', 400, IRE],
  ['wave2.6-i2v-flash', { shot_type: 'multi', prompt_extend: false }, 'shot_type', 400, IRE],
  ['wave2.6-i2v-flash', { seed: -1 }, 'seed', 400, IRE],
  ['wave2.6-i2v-flash', { watermark: 'no' }, 'watermark', 400, IRE],
  ['kinetic-video-o1', { prompt: undefined }, 'prompt', 400, IRE],
  ['kinetic-video-o1', { mode: 'max' }, 'mode', 400, IRE],
  ['kinetic-video-o1', { duration: 8 }, 'duration', 400, IRE],
  ['kinetic-video-o1', { aspect_ratio: '4:3' }, 'aspect_ratio', 400, IRE],
  ['kinetic-video-o1', { image_urls: [U, U, U] }, 'image_urls', 400, IRE],
  ['kinetic-video-o1', { video_list: [{ video_url: V }, { video_url: V }] }, 'video_list', 400, IRE],
  ['kinetic-video-o1', { video_list: [{ refer_type: 'base' }] }, 'video_list.0.video_url', 400, IRE],
  ['kinetic-video-o1', { video_list: [{ video_url: V }], image_urls: [U] }, 'image_urls', 400, IRE],
  ['kinetic-video-o1', { video_list: [{ video_url: V, refer_type: 'feature' }], image_urls: [U, U] }, 'image_urls', 400, IRE],
  ['kinetic-video-o1', { prompt: 'see <<<image_2>>>', image_urls: [U] }, 'prompt', 400, IRE],
  ['clipq3-pro', { prompt: undefined }, '', 400, IRE],
  ['clipq3-pro', { prompt: 'x'.repeat(2001) }, 'prompt', 400, IRE],
  ['clipq3-pro', { duration: 17 }, 'duration', 400, IRE],
  ['clipq3-pro', { resolution: '480p' }, 'resolution', 400, IRE],
  ['clipq3-pro', { aspect_ratio: '16:9', image_urls: [U] }, 'aspect_ratio', 400, IRE],
  ['clipq3-pro', { image_urls: [U, U, U] }, 'image_urls', 400, IRE],
  ['clipq3-pro', { audio: null }, 'audio', 400, IRE],
  ['clipq3-pro', { seed: -2 }, 'seed', 400, IRE],
  ['motion-1-0-pro-fast', { nsfw_check: 'true' }, 'nsfw_check', 400, IRE],
  ['motion-1-0-pro-fast', { prompt: undefined }, 'prompt', 400, IRE],
  ['motion-1-0-pro-fast', { duration: 13 }, 'duration', 400, IRE],
  ['motion-1-0-pro-fast', { resolution: '4k' }, 'resolution', 400, IRE],
  ['reel-v4-fast', { duration: 2 }, 'duration', 400, IRE],
  ['reel-v4-fast', { resolution: '4k' }, 'resolution', 400, IRE],
  ['reel-v4-fast', { prompt_optimizer: 'yes' }, 'prompt_optimizer', 400, IRE],
  ['reel-v4-fast', { image_urls: [U], reference_image_urls: [U] }, 'image_urls', 422, IRE],
  ['reel-v4-fast', { image_urls: [U, U], reference_video_urls: [U] }, 'image_urls', 422, IRE],
  ['reel-v4-fast', { first_frame_image: U, last_frame_image: U, reference_audio_urls: [U] }, 'first_frame_image', 422, IRE],
  ['reel-v4-fast', { first_frame_image: U }, 'last_frame_image', 400, IRE],
  ['wave2.7-videoedit', { video_urls: undefined }, 'video_urls', 400, IRE],
  ['wave2.7-videoedit', { resolution: '4K' }, 'resolution', 400, IRE],
  ['wave2.7-r2v', { image_with_roles: [{ url: U, role: 'voice' }] }, 'image_with_roles.0.role', 400, IRE],
  ['wave2.7-r2v', { duration: '5' }, 'duration', 400, IRE],
  ['motion-2.0', { asset_urls: ['https://cdn.example.com/a.png'] }, 'asset_urls.0', 400, IRE],
];

describe('every table row of spec 4.6 / 4.7 has a violating body', () => {
  it.each(Object.keys(BASE))('the base body of %s is valid', (model) => {
    const r = resolveModel(model)!.contract!.validate({ model, ...BASE[model] }, model);
    expect(r.ok ? 'ok' : r.violation).toBe('ok');
  });

  it.each(ROWS)('%s rejects %j on `%s` with %i %s', (model, patch, field, status, type) => {
    const r = resolveModel(model)!.contract!.validate({ model, ...BASE[model], ...patch }, model);
    if (r.ok) throw new Error('expected a violation');
    expect(r.violation).toMatchObject({ field, status, type });
    expect(r.violation.message).toMatch(field ? new RegExp(field.split('.')[0]!) : /prompt/);
  });
});

describe('normalization rules', () => {
  const ok = (model: string, body: Record<string, unknown>) => {
    const r = resolveModel(model)!.contract!.validate({ model, ...body }, model);
    if (!r.ok) throw new Error(r.violation.message);
    return r.value;
  };

  it('pixel-v6 detects modes in spec order, first match wins', () => {
    expect(ok('pixel-v6', { prompt: 'p' }).derived.mode).toBe('text-to-video');
    expect(ok('pixel-v6', { prompt: 'p', image_urls: [U], img_references: [U] }).derived.mode).toBe('image-to-video');
    expect(ok('pixel-v6', { prompt: 'p', first_frame_image: U, last_frame_image: U, duration: 8, img_references: [U] }).derived.mode).toBe('transition');
    expect(ok('pixel-v6', { prompt: 'p', img_references: [U], extend_from_task_id: 'task_abc' }).derived.mode).toBe('multi-reference');
    expect(ok('pixel-v6', { prompt: 'p', extend_from_task_id: 'task_abc' }).derived.mode).toBe('extension');
  });

  it('pixel-v6 bills per second by resolution with audio as a separate item', () => {
    const v = ok('pixel-v6', { prompt: 'p', duration: 10, resolution: '1080p', audio: true });
    expect(v.billing.map((b) => [b.keys[0], b.quantity])).toEqual([
      ['pixel-v6@1080p', 10],
      ['pixel-v6@audio-1080p', 10],
    ]);
  });

  it('wave2.6 derives the audio outcome from audio and audio_url', () => {
    const A = 'https://cdn.example.com/a.mp3';
    expect(ok('wave2.6-i2v-flash', { image_urls: [U] }).derived.audio).toBe('generated');
    expect(ok('wave2.6-i2v-flash', { image_urls: [U], audio_url: A }).derived.audio).toBe('provided');
    const silent = ok('wave2.6-i2v-flash', { image_urls: [U], audio_url: A, audio: false });
    expect(silent.derived.audio).toBe('silent');
    expect(silent.upstreamBody.audio_url).toBeUndefined();
  });

  it('kinetic prepends <<<image_1>>> only when images come without a citation', () => {
    expect(ok('kinetic-video-o1', { prompt: 'a cat', image_urls: [U] }).upstreamBody.prompt).toBe('<<<image_1>>> a cat');
    expect(ok('kinetic-video-o1', { prompt: 'a <<<image_1>>> cat', image_urls: [U] }).upstreamBody.prompt).toBe('a <<<image_1>>> cat');
    expect(ok('kinetic-video-o1', { prompt: 'a cat' }).upstreamBody.prompt).toBe('a cat');
  });

  it('spark-imagine-image-2.0 answers with shape B and drops the default quality for edits', () => {
    expect(resolveModel('spark-imagine-image-2.0')!.contract!.ack).toBe('B');
    expect(ok('spark-imagine-image-2.0', { prompt: 'p', image_urls: [U] }).upstreamBody.quality).toBeUndefined();
    expect(ok('spark-imagine-image-2.0', { prompt: 'p', n: 3 }).billing[0]).toMatchObject({
      keys: ['spark-imagine-image-2.0@1k-medium', 'spark-imagine-image-2.0@1k', 'spark-imagine-image-2.0'],
      quantity: 3,
    });
  });

  it('Omni-Flash-Ext accepts resolution in any case and drops duration for motion references', () => {
    expect(ok('Omni-Flash-Ext', { prompt: 'p', resolution: '4K' }).upstreamBody.resolution).toBe('4k');
    expect(ok('Omni-Flash-Ext', { prompt: 'p', video_urls: [V] }).upstreamBody.duration).toBeUndefined();
    expect(ok('Omni-Flash-Ext', { prompt: 'p', image_urls: [U, U, U] }).derived.mode).toBe('reference-fusion');
  });

  it('aliases validate identically and normalize to the canonical id', () => {
    for (const [alias, id] of [
      ['pict-image-2-ext', 'pict-image-2'],
      ['spark-imagine-1.5-ext', 'spark-imagine-1.5-main'],
      ['spark-imagine-1.5-video-ext', 'spark-imagine-1.5-video-main'],
    ]) {
      const m = resolveModel(alias!)!;
      expect(m.id).toBe(id);
      const r = m.contract!.validate({ model: alias, prompt: 'p' }, alias!);
      expect(r.ok && r.value.model).toBe(id);
      expect(r.ok && r.value.requestedModel).toBe(alias);
    }
  });

  it('clipq3 picks the mode from the image count', () => {
    expect(ok('clipq3-pro', { image_urls: [U, U] }).derived.mode).toBe('first-last-frame');
    expect(ok('clipq3-pro', { image_urls: [U] }).derived.mode).toBe('image-to-video');
  });
});
