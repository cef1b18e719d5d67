import type { ExpectedOutput } from '@gmg/contracts';

/**
 * The models the replicate mode knows, with the input schema of each model page's "API" tab (the pages the adapter's
 * translation cites, libs/upstream/src/protocols/replicate/replicate.translation.ts). Stricter than Replicate in one
 * way, on purpose: an input name the page does not list is refused (Replicate (guess) ignores it), so a test proves
 * the translation sends only documented names.
 */
export interface InputProp {
  type: 'string' | 'integer' | 'number' | 'boolean' | 'file' | 'files';
  enum?: readonly (string | number)[];
  min?: number;
  max?: number;
  maxItems?: number;
}

export interface SimModel {
  required: readonly string[];
  props: Readonly<Record<string, InputProp>>;
  /** The page's output schema: one URI, or a list of them. */
  output: 'one' | 'list';
  /** What the prediction renders (the file links carry the size and length). */
  expected(input: Record<string, unknown>): ExpectedOutput;
}

const FLUX_RATIOS = ['match_input_image', 'custom', '1:1', '16:9', '3:2', '2:3', '4:5', '5:4', '9:16', '3:4', '4:3'] as const;
const MP = { '0.5 MP': 0.5, '1 MP': 1, '2 MP': 2, '4 MP': 4, match_input_image: 1 } as const;

const ratioOf = (r: unknown): number => {
  const m = typeof r === 'string' ? /^(\d+):(\d+)$/.exec(r) : null;
  return m ? Number(m[1]) / Number(m[2]) : 1;
};
/** Sides of `megapixels` at `ratio`, rounded to `step` (what the models print: "Generating 2304x1728 image"). */
const sidesOf = (megapixels: number, ratio: number, step: number) => {
  const px = megapixels * 1_048_576;
  const round = (v: number) => Math.max(step, Math.round(v / step) * step);
  return { width: round(Math.sqrt(px * ratio)), height: round(Math.sqrt(px / ratio)) };
};
const round32 = (v: unknown) => Math.max(256, Math.round(Number(v) / 32) * 32);

function flux(maxImages: number, flex: boolean): SimModel {
  return {
    required: ['prompt'],
    props: {
      prompt: { type: 'string' },
      input_images: { type: 'files', maxItems: maxImages },
      aspect_ratio: { type: 'string', enum: FLUX_RATIOS },
      resolution: { type: 'string', enum: Object.keys(MP) },
      width: { type: 'integer', min: 256, max: 2048 },
      height: { type: 'integer', min: 256, max: 2048 },
      safety_tolerance: { type: 'integer', min: 1, max: 5 },
      seed: { type: 'integer' },
      output_format: { type: 'string', enum: ['webp', 'jpg', 'png'] },
      output_quality: { type: 'integer', min: 0, max: 100 },
      ...(flex
        ? {
            steps: { type: 'integer', min: 1, max: 50 },
            guidance: { type: 'number', min: 1.5, max: 10 },
            prompt_upsampling: { type: 'boolean' },
          }
        : {}),
    },
    output: 'one',
    expected(input) {
      const custom = input.aspect_ratio === 'custom' && input.width !== undefined && input.height !== undefined;
      const dims = custom
        ? { width: round32(input.width), height: round32(input.height) }
        : sidesOf(MP[(input.resolution as keyof typeof MP) ?? '1 MP'] ?? 1, ratioOf(input.aspect_ratio), 32);
      const format = input.output_format === 'jpg' ? 'jpeg' : typeof input.output_format === 'string' ? input.output_format : 'webp';
      return { kind: 'images', count: 1, ...dims, format };
    },
  };
}

const seedream4: SimModel = {
  required: ['prompt'],
  props: {
    prompt: { type: 'string' },
    image_input: { type: 'files', maxItems: 10 },
    size: { type: 'string', enum: ['1K', '2K', '4K', 'custom'] },
    aspect_ratio: { type: 'string', enum: ['match_input_image', '1:1', '4:3', '3:4', '16:9', '9:16', '3:2', '2:3', '21:9'] },
    width: { type: 'integer', min: 1024, max: 4096 },
    height: { type: 'integer', min: 1024, max: 4096 },
    sequential_image_generation: { type: 'string', enum: ['disabled', 'auto'] },
    max_images: { type: 'integer', min: 1, max: 15 },
    enhance_prompt: { type: 'boolean' },
  },
  output: 'list',
  expected(input) {
    const tier = ({ '1K': 1, '2K': 4, '4K': 16 } as Record<string, number>)[typeof input.size === 'string' ? input.size : '2K'] ?? 4;
    const dims =
      input.size === 'custom' ? { width: Number(input.width ?? 2048), height: Number(input.height ?? 2048) } : sidesOf(tier, ratioOf(input.aspect_ratio), 16);
    const count = input.sequential_image_generation === 'auto' ? Number(input.max_images ?? 1) : 1;
    return { kind: 'images', count, ...dims, format: 'jpeg' };
  },
};

const video = (seconds: unknown): ExpectedOutput => ({ kind: 'videos', count: 1, format: 'mp4', durationSeconds: Number(seconds ?? 5) });

function seedance(lastFrame: boolean): SimModel {
  return {
    required: ['prompt'],
    props: {
      prompt: { type: 'string' },
      image: { type: 'file' },
      ...(lastFrame ? { last_frame_image: { type: 'file' } } : {}),
      duration: { type: 'integer', min: 2, max: 12 },
      resolution: { type: 'string', enum: ['480p', '720p', '1080p'] },
      aspect_ratio: { type: 'string', enum: ['16:9', '4:3', '1:1', '3:4', '9:16', '21:9', '9:21'] },
      fps: { type: 'integer', enum: [24] },
      camera_fixed: { type: 'boolean' },
      seed: { type: 'integer' },
    },
    output: 'one',
    expected: (input) => video(input.duration),
  };
}

const wan25I2v: SimModel = {
  required: ['image', 'prompt'],
  props: {
    image: { type: 'file' },
    prompt: { type: 'string' },
    negative_prompt: { type: 'string' },
    audio: { type: 'file' },
    duration: { type: 'integer', enum: [5, 10] },
    resolution: { type: 'string', enum: ['480p', '720p', '1080p'] },
    enable_prompt_expansion: { type: 'boolean' },
    seed: { type: 'integer' },
  },
  output: 'one',
  expected: (input) => video(input.duration),
};

export const REPLICATE_SIM_MODELS: Readonly<Record<string, SimModel>> = {
  'black-forest-labs/flux-2-flex': flux(10, true),
  'black-forest-labs/flux-2-pro': flux(8, false),
  'black-forest-labs/flux-2-max': flux(8, false),
  'bytedance/seedream-4': seedream4,
  'bytedance/seedance-1-pro': seedance(true),
  'bytedance/seedance-1-pro-fast': seedance(false),
  'wan-video/wan-2.5-i2v': wan25I2v,
};
