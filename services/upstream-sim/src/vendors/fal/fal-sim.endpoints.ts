import { isObj } from '../../sim-json';
/**
 * The fal endpoints the simulator serves, each with the inputs its fal.ai page documents (input schema: required
 * inputs, types, enums, ranges). Written from fal's pages, not from the gateway's translation, so the simulator can
 * refuse what the translation gets wrong. Endpoints and inputs marked "guess" could not be confirmed on fal.ai.
 * Pages: https://fal.ai/models/<endpoint id>/llms.txt and https://fal.ai/docs/model-api-reference/… (docs/upstreams/fal.md).
 */

type Range = readonly [number, number];
type Input =
  'string' | 'boolean' | 'url' | 'urls' | 'image_size' | { readonly int: Range } | { readonly number: Range } | { readonly enum: readonly unknown[] };

export interface FalSimEndpoint {
  kind: 'images' | 'videos';
  required: readonly string[];
  inputs: Readonly<Record<string, Input>>;
  /** Output image format when `output_format` is not sent. */
  format?: 'jpeg' | 'png' | 'webp';
  /** Video length when `duration` is not sent. */
  seconds?: number;
}

const str = (...values: string[]) => ({ enum: values });
const SEED = { int: [0, 4294967295] } as const;
const FORMATS = str('jpeg', 'png', 'webp');

const flux = (extra: Record<string, Input> = {}): Record<string, Input> => ({
  prompt: 'string',
  image_size: 'image_size',
  seed: SEED,
  safety_tolerance: str('1', '2', '3', '4', '5'),
  enable_safety_checker: 'boolean',
  output_format: str('jpeg', 'png'),
  sync_mode: 'boolean',
  ...extra,
});
const FLEX = { num_inference_steps: { int: [1, 50] }, guidance_scale: { number: [1.5, 10] }, enable_prompt_expansion: 'boolean' } as const;
const image = (inputs: Record<string, Input>, required: string[] = ['prompt'], format: FalSimEndpoint['format'] = 'jpeg'): FalSimEndpoint => ({
  kind: 'images',
  required,
  inputs,
  format,
});
const withEdit = (name: string, ep: FalSimEndpoint): Record<string, FalSimEndpoint> => ({
  [name]: ep,
  [`${name}/edit`]: { ...ep, required: [...ep.required, 'image_urls'], inputs: { ...ep.inputs, image_urls: 'urls' } },
});

const NANO = image(
  {
    prompt: 'string',
    num_images: { int: [1, 4] },
    seed: SEED,
    aspect_ratio: str('auto', '21:9', '16:9', '3:2', '4:3', '5:4', '1:1', '4:5', '3:4', '2:3', '9:16'),
    resolution: str('1K', '2K', '4K'),
    output_format: FORMATS,
    safety_tolerance: str('1', '2', '3', '4', '5', '6'),
    sync_mode: 'boolean',
  },
  ['prompt'],
  'png',
);
const GROK_RATIOS = str('2:1', '20:9', '19.5:9', '16:9', '4:3', '3:2', '1:1', '2:3', '3:4', '9:16', '9:19.5', '9:20', '1:2');
const GROK = image({ prompt: 'string', num_images: { int: [1, 4] }, aspect_ratio: GROK_RATIOS, output_format: FORMATS, sync_mode: 'boolean' });
// guess: the edit endpoint takes one `image_url`
const GROK_EDIT = image({ prompt: 'string', image_url: 'url', num_images: { int: [1, 4] }, output_format: FORMATS, sync_mode: 'boolean' }, [
  'prompt',
  'image_url',
]);
const SEEDREAM = image(
  {
    prompt: 'string',
    image_size: 'image_size',
    num_images: { int: [1, 6] },
    max_images: { int: [1, 6] },
    seed: SEED,
    sync_mode: 'boolean',
    enable_safety_checker: 'boolean',
  },
  ['prompt'],
  'png',
);
const seedream = (base: string) => ({
  [`${base}/text-to-image`]: SEEDREAM,
  [`${base}/edit`]: { ...SEEDREAM, required: ['prompt', 'image_urls'], inputs: { ...SEEDREAM.inputs, image_urls: 'urls' } } as FalSimEndpoint,
});

const video = (inputs: Record<string, Input>, required: string[], seconds = 5): FalSimEndpoint => ({ kind: 'videos', required, inputs, seconds });

const PIXVERSE = {
  prompt: 'string',
  resolution: str('360p', '540p', '720p', '1080p'),
  duration: str('5', '8', '10'),
  negative_prompt: 'string',
  seed: SEED,
  generate_audio_switch: 'boolean',
} as const;
const PIX_RATIOS = str('16:9', '4:3', '1:1', '3:4', '9:16');
const pixverse = (base: string) => ({
  [`${base}/text-to-video`]: video({ ...PIXVERSE, aspect_ratio: PIX_RATIOS }, ['prompt']),
  [`${base}/image-to-video`]: video({ ...PIXVERSE, image_url: 'url' }, ['prompt', 'image_url']),
  // guess: the transition frame names
  [`${base}/transition`]: video({ ...PIXVERSE, aspect_ratio: PIX_RATIOS, first_image_url: 'url', end_image_url: 'url' }, ['prompt', 'first_image_url']),
});

const VEO = {
  prompt: 'string',
  duration: str('4s', '6s', '8s'),
  negative_prompt: 'string',
  resolution: str('720p', '1080p', '4k'),
  generate_audio: 'boolean',
  seed: SEED,
  auto_fix: 'boolean',
} as const;
const veo = (base: string) => ({
  [base]: video({ ...VEO, aspect_ratio: str('16:9', '9:16') }, ['prompt'], 8),
  [`${base}/image-to-video`]: video({ ...VEO, aspect_ratio: str('auto', '16:9', '9:16'), image_url: 'url' }, ['prompt', 'image_url'], 8),
});

const GROK_VIDEO = { prompt: 'string', duration: { int: [1, 15] }, resolution: str('480p', '720p') } as const;
const GROK_VIDEO_RATIOS = str('16:9', '9:16', '1:1', '4:3', '3:2', '2:3', '3:4');

const KLING_I2V = { prompt: 'string', start_image_url: 'url', end_image_url: 'url', duration: str('3', '4', '5', '6', '7', '8', '9', '10') } as const;
// guess: the text (reference) endpoint's inputs
const KLING_REF = { prompt: 'string', image_urls: 'urls', aspect_ratio: str('16:9', '9:16', '1:1'), duration: KLING_I2V.duration } as const;
const kling = (base: string) => ({
  [`${base}/image-to-video`]: video(KLING_I2V, ['prompt', 'start_image_url']),
  [`${base}/reference-to-video`]: video(KLING_REF, ['prompt']),
});

// guess: Vidu Q3's endpoints and inputs follow fal's Vidu Q2 pages
const VIDU = { prompt: 'string', duration: { int: [1, 16] }, resolution: str('540p', '720p', '1080p'), audio: 'boolean', seed: SEED } as const;
const vidu = (base: string) => ({
  [`${base}/text-to-video`]: video({ ...VIDU, aspect_ratio: str('16:9', '9:16', '4:3', '3:4', '1:1') }, ['prompt']),
  [`${base}/image-to-video`]: video({ ...VIDU, image_url: 'url' }, ['image_url']),
  [`${base}/start-end-to-video`]: video({ ...VIDU, start_image_url: 'url', end_image_url: 'url' }, ['start_image_url', 'end_image_url']),
});

const SEEDANCE1 = {
  prompt: 'string',
  resolution: str('480p', '720p', '1080p'),
  duration: str('2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12'),
  camera_fixed: 'boolean',
  seed: SEED,
  enable_safety_checker: 'boolean',
} as const;
const seedance1 = (base: string) => ({
  [`${base}/text-to-video`]: video({ ...SEEDANCE1, aspect_ratio: str('21:9', '16:9', '4:3', '1:1', '3:4', '9:16') }, ['prompt']),
  [`${base}/image-to-video`]: video({ ...SEEDANCE1, image_url: 'url', end_image_url: 'url' }, ['prompt', 'image_url']),
});

const SEEDANCE2 = {
  prompt: 'string',
  duration: str('4', '5', '8', '10', '12', '15'),
  resolution: str('480p', '720p'),
  aspect_ratio: str('auto', '21:9', '16:9', '4:3', '1:1', '3:4', '9:16'),
  generate_audio: 'boolean',
  seed: SEED,
} as const;
const seedance2 = (base: string) => ({
  [`${base}/text-to-video`]: video(SEEDANCE2, ['prompt']),
  // guess: the frame names of the image endpoint
  [`${base}/image-to-video`]: video({ ...SEEDANCE2, image_url: 'url', end_image_url: 'url' }, ['prompt', 'image_url']),
  [`${base}/reference-to-video`]: video({ ...SEEDANCE2, image_urls: 'urls', video_urls: 'urls', audio_urls: 'urls' }, ['prompt']),
});

export const FAL_SIM_ENDPOINTS: Readonly<Record<string, FalSimEndpoint>> = {
  ...withEdit('fal-ai/flux-2-pro', image(flux())),
  ...withEdit('fal-ai/flux-2-max', image(flux())), // guess: [max] takes [pro]'s inputs
  ...withEdit('fal-ai/flux-2-flex', image(flux(FLEX))),
  ...withEdit('fal-ai/nano-banana-pro', NANO),
  'xai/grok-imagine-image': GROK,
  'xai/grok-imagine-image/edit': GROK_EDIT,
  ...seedream('fal-ai/bytedance/seedream/v4.5'),
  ...seedream('fal-ai/bytedance/seedream/v4'),
  ...pixverse('fal-ai/pixverse/v5.6'),
  ...veo('fal-ai/veo3.1/fast'),
  'xai/grok-imagine-video/text-to-video': video({ ...GROK_VIDEO, aspect_ratio: GROK_VIDEO_RATIOS }, ['prompt'], 6),
  'xai/grok-imagine-video/image-to-video': video({ ...GROK_VIDEO, image_url: 'url' }, ['prompt', 'image_url'], 6),
  // guess: Wan 2.6 flash and the Wan 2.7 endpoints
  'wan/v2.6/image-to-video/flash': video(
    {
      prompt: 'string',
      image_url: 'url',
      negative_prompt: 'string',
      resolution: str('720p', '1080p'),
      duration: str('5', '10', '15'),
      audio_url: 'url',
      enable_prompt_expansion: 'boolean',
      multi_shots: 'boolean',
      seed: SEED,
      enable_safety_checker: 'boolean',
    },
    ['prompt', 'image_url'],
  ),
  'fal-ai/wan/v2.7/video-edit': video(
    { prompt: 'string', video_url: 'url', image_urls: 'urls', resolution: str('720p', '1080p'), duration: { int: [2, 15] } },
    ['prompt', 'video_url'],
  ),
  'fal-ai/wan/v2.7/reference-to-video': video({ prompt: 'string', image_urls: 'urls', resolution: str('720p', '1080p'), duration: { int: [2, 10] } }, [
    'prompt',
    'image_urls',
  ]),
  ...kling('fal-ai/kling-video/o1'),
  ...kling('fal-ai/kling-video/o1/standard'),
  ...vidu('fal-ai/vidu/q3'),
  ...vidu('fal-ai/vidu/q3/turbo'),
  ...seedance1('fal-ai/bytedance/seedance/v1/pro'),
  ...seedance1('fal-ai/bytedance/seedance/v1/pro/fast'),
  ...seedance2('bytedance/seedance-2.0'),
  ...seedance2('bytedance/seedance-2.0/fast'),
};

/** One entry of fal's 422 `detail` (pydantic's shape: https://fal.ai/docs/documentation/model-apis/errors). */
export interface FalInputError {
  loc: string[];
  msg: string;
  type: string;
}

const isUrl = (v: unknown) => typeof v === 'string' && /^(https?:\/\/|data:)/i.test(v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

function inputProblem(name: string, spec: Input, v: unknown): FalInputError | undefined {
  const loc = ['body', name];
  if (spec === 'string') return typeof v === 'string' ? undefined : { loc, msg: 'Input should be a valid string', type: 'string_type' };
  if (spec === 'boolean') return typeof v === 'boolean' ? undefined : { loc, msg: 'Input should be a valid boolean', type: 'bool_type' };
  if (spec === 'url') return isUrl(v) ? undefined : { loc, msg: 'Input should be a valid URL', type: 'url_parsing' };
  if (spec === 'urls') return Array.isArray(v) && v.every(isUrl) ? undefined : { loc, msg: 'Input should be a valid list of URLs', type: 'list_type' };
  if (spec === 'image_size') {
    const named = ['square_hd', 'square', 'portrait_4_3', 'portrait_16_9', 'landscape_4_3', 'landscape_16_9'];
    const ok = (typeof v === 'string' && named.includes(v)) || (isObj(v) && isInt(v.width) && isInt(v.height) && v.width > 0 && v.height > 0);
    return ok ? undefined : { loc, msg: `Input should be one of ${named.join(', ')} or {width, height}`, type: 'image_size' };
  }
  if ('enum' in spec) {
    return spec.enum.includes(v) ? undefined : { loc, msg: `Input should be ${spec.enum.map((e) => JSON.stringify(e)).join(', ')}`, type: 'enum' };
  }
  const [min, max] = 'int' in spec ? spec.int : spec.number;
  if ('int' in spec ? !isInt(v) : typeof v !== 'number')
    return { loc, msg: `Input should be a valid ${'int' in spec ? 'integer' : 'number'}`, type: 'int_type' };
  if ((v as number) < min) return { loc, msg: `Input should be greater than or equal to ${min}`, type: 'greater_than_equal' };
  if ((v as number) > max) return { loc, msg: `Input should be less than or equal to ${max}`, type: 'less_than_equal' };
  return undefined;
}

/**
 * Every problem of an input for `ep`, as fal's 422 lists them. Stricter than fal on one point: an input the page does
 * not list is refused (`extra_forbidden`), where fal ignores it silently — which would hide a translation bug.
 */
export function falInputErrors(ep: FalSimEndpoint, input: unknown): FalInputError[] {
  if (!isObj(input)) return [{ loc: ['body'], msg: 'Input should be a valid dictionary', type: 'dict_type' }];
  const errors: FalInputError[] = ep.required.filter((r) => input[r] === undefined).map((r) => ({ loc: ['body', r], msg: 'Field required', type: 'missing' }));
  for (const [name, v] of Object.entries(input)) {
    const spec = ep.inputs[name];
    const p = spec ? inputProblem(name, spec, v) : { loc: ['body', name], msg: 'Extra inputs are not permitted', type: 'extra_forbidden' };
    if (p) errors.push(p);
  }
  return errors;
}
