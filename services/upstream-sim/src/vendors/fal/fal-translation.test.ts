import { listModels, resolveModel, validateRequest, type NormalizedRequest } from '@gmg/contracts';
import { FAL_TRANSLATION, checkTranslation, falEndpointOf, translateInput } from '@gmg/upstream';
import { FAL_SIM_ENDPOINTS, falInputErrors } from './fal-sim.endpoints';

const IMG = 'https://example.com/a.png';
const IMG2 = 'https://example.com/b.png';
const VID = 'https://example.com/a.mp4';

/** Valid requests of every model, covering each mode a family maps to its own fal endpoint. */
const SAMPLES: Record<string, Array<Record<string, unknown>>> = {
  'lumen-2-flex': [
    { prompt: 'p', steps: 20, guidance: 3, prompt_upsampling: true, seed: 7 },
    { prompt: 'p', image_urls: [IMG], size: '16:9' },
  ],
  'lumen-2-pro': [
    { prompt: 'p', resolution: '1MP', size: '4:3', output_format: 'png' },
    { prompt: 'p', image_urls: [IMG, IMG2], width: 1024, height: 768 },
  ],
  'lumen-2-max': [
    { prompt: 'p', safety_tolerance: 5 },
    { prompt: 'p', image_urls: [IMG], size: 'auto' },
  ],
  'pict-image-2': [
    { prompt: 'p', n: 2, size: '16:9', resolution: '4k' },
    { prompt: 'p', image_urls: [IMG] },
  ],
  'spark-imagine-image-2.0': [
    { prompt: 'p', n: 3, aspect_ratio: '19.5:9' },
    { prompt: 'p', aspect_ratio: 'auto', image_urls: [IMG] },
  ],
  'spark-imagine-1.5-main': [
    { prompt: 'p', size: '3:2', n: 4 },
    { prompt: 'p', image_urls: [IMG] },
  ],
  'spark-imagine-image': [{ prompt: 'p' }],
  'spark-imagine-image-quality': [{ prompt: 'p', size: '9:16' }],
  'dream-5-0-pro': [
    { prompt: 'p', size: '21:9', resolution: '4k' },
    { prompt: 'p', image_urls: [IMG] },
  ],
  'dream-5-0-lite': [
    { prompt: 'p', n: 4 },
    { prompt: 'p', image_urls: [IMG, IMG2] },
  ],
  'pixel-v6': [
    { prompt: 'p', size: '9:16', audio: true, negative_prompt: 'x', motion_mode: 'normal' },
    { prompt: 'p', image_urls: [IMG], duration: 8, resolution: '1080p' },
    { prompt: 'p', first_frame_image: IMG, last_frame_image: IMG2, duration: 5 },
  ],
  'Omni-Flash-Ext': [
    { prompt: 'p', duration: 4, resolution: '4K' },
    { prompt: 'p', image_urls: [IMG], aspect_ratio: '9:16' },
  ],
  'spark-imagine-1.5-video-main': [
    { prompt: 'p', size: '1:1', duration: 10, resolution: '720p' },
    { prompt: 'p', image_urls: [IMG] },
  ],
  'wave2.6-i2v-flash': [{ prompt: 'p', image_urls: [IMG], duration: 10, shot_type: 'multi', audio_url: 'https://example.com/a.mp3', seed: 1 }],
  'wave2.7-videoedit': [
    { prompt: 'p', video_urls: [VID], image_urls: [IMG], resolution: '720p', duration: 4 },
    { prompt: 'p', video_urls: [VID] },
  ],
  'wave2.7-r2v': [{ prompt: 'p', image_with_roles: [{ url: IMG }, { url: IMG2, role: 'reference_image' }] }],
  'kinetic-video-o1': [
    { prompt: 'p', mode: 'pro', duration: 10, aspect_ratio: '1:1' },
    { prompt: 'p <<<image_2>>>', image_urls: [IMG, IMG2] },
  ],
  'clipq3-pro': [{ prompt: 'p', aspect_ratio: '4:3', audio: false, seed: 3 }, { image_urls: [IMG] }, { prompt: 'p', image_urls: [IMG, IMG2], duration: 8 }],
  'clipq3-turbo': [{ prompt: 'p', resolution: '1080p' }],
  'motion-1-0-pro-fast': [
    { prompt: 'p', aspect_ratio: '9:16', duration: 12 },
    { prompt: 'p', image_urls: [IMG, IMG2] },
  ],
  'motion-1-0-pro-quality': [{ prompt: 'p', resolution: '720p' }],
  'reel-v4-fast': [
    { prompt: 'p', duration: 10, aspect_ratio: '21:9', resolution: '480p' },
    { prompt: 'p', image_urls: [IMG, IMG2] },
    { prompt: 'p', first_frame_image: IMG, last_frame_image: IMG2 },
    { prompt: 'p', reference_image_urls: [IMG], reference_video_urls: [VID], reference_audio_urls: ['https://example.com/a.mp3'] },
  ],
  'reel-v4-std': [{ prompt: 'p' }, { prompt: 'p', image_with_roles: [{ url: IMG, role: 'reference_image' }], video_urls: [VID] }],
};

/** Not served through fal on purpose: the art suite, and motion-2.0's approved avatar assets (asset_urls). */
const NOT_ON_FAL = ['artgen', 'motion-2.0'];

function normalize(model: string, body: Record<string, unknown>): NormalizedRequest {
  const def = resolveModel(model);
  if (!def) throw new Error(`no model ${model}`);
  const v = validateRequest(def, { model, ...body }, model);
  if (!v.ok) throw new Error(`${model} sample is invalid: ${v.violation.message}`);
  return v.value;
}

describe('fal translation', () => {
  it('covers every image and video model except the art suite and motion-2.0 assets', () => {
    const media = listModels()
      .filter((m) => (m.category === 'image' || m.category === 'video') && !NOT_ON_FAL.includes(m.id))
      .map((m) => m.id);
    const served = FAL_TRANSLATION.families.flatMap((f) => f.models);
    expect(media.filter((m) => !served.includes(m))).toEqual([]);
    expect(Object.keys(SAMPLES).sort()).toEqual([...media].sort());
  });

  for (const [model, bodies] of Object.entries(SAMPLES)) {
    it.each(bodies.map((b, i) => [i, b] as const))(`${model} sample %i translates into an input the strict fal simulator accepts`, (_i, body) => {
      const req = normalize(model, body);
      expect(checkTranslation(FAL_TRANSLATION, req)).toBeUndefined();
      const endpoint = falEndpointOf({ modelMap: {} }, req);
      const ep = FAL_SIM_ENDPOINTS[endpoint];
      expect(ep).toBeDefined();
      expect(falInputErrors(ep!, translateInput(FAL_TRANSLATION, { settings: {} }, req))).toEqual([]);
      expect(ep!.kind).toBe(req.expected.kind);
    });
  }

  it('the simulator refuses our own untranslated body (strictness: the translation is what makes it pass)', () => {
    const req = normalize('pixel-v6', { prompt: 'p', duration: 5 });
    const ep = FAL_SIM_ENDPOINTS[falEndpointOf({ modelMap: {} }, req)]!;
    const types = falInputErrors(ep, req.upstreamBody).map((e) => `${e.loc.join('.')}:${e.type}`);
    expect(types).toEqual(expect.arrayContaining(['body.model:extra_forbidden', 'body.duration:enum', 'body.size:extra_forbidden']));
    expect(falInputErrors(ep, { duration: '5' })).toEqual([{ loc: ['body', 'prompt'], msg: 'Field required', type: 'missing' }]);
  });

  it('refuses what fal cannot honour, naming the field', () => {
    expect(checkTranslation(FAL_TRANSLATION, normalize('lumen-2-pro', { prompt: 'p', output_format: 'webp' }))?.field).toBe('output_format');
    expect(checkTranslation(FAL_TRANSLATION, normalize('Omni-Flash-Ext', { prompt: 'p', duration: 10 }))?.field).toBe('duration');
    expect(checkTranslation(FAL_TRANSLATION, normalize('pixel-v6', { prompt: 'p', img_references: [IMG] }))?.field).toBe('img_references');
    expect(checkTranslation(FAL_TRANSLATION, normalize('lumen-2-pro', { prompt: 'p', extra_knob: 1 }))?.field).toBe('extra_knob');
  });

  it('maps a model through the channel model_map and keeps the mode sub-path', () => {
    const req = normalize('lumen-2-pro', { prompt: 'p', image_urls: [IMG] });
    expect(falEndpointOf({ modelMap: { 'lumen-2-pro': 'fal-ai/flux-2-max' } }, req)).toBe('fal-ai/flux-2-max/edit');
  });
});
