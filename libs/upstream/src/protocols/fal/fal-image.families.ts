import type { FieldRule } from '../../translation';
import { first, firstProblem, imagesOf, onlyValues, outputSize, refuseWhen, type FalFamily } from './fal-rules';

/**
 * Image families on fal. Input names follow each endpoint's page on fal.ai (cited in docs/upstreams/fal.md); the
 * ones marked "(guess)" in the notes could not be confirmed there.
 */

const SIZE_AS_IMAGE_SIZE: FieldRule = { drop: 'sent as the exact output size: `image_size` {width, height}' };
const withEdit = (base: string, req: Parameters<NonNullable<FalFamily['endpoint']>>[1]) => (imagesOf(req).length ? `${base}/edit` : base);

/** FLUX.2 [flex] / [pro] / [max]: `fal-ai/flux-2-<tier>`, references on its `/edit` endpoint. */
function lumen(model: 'lumen-2-flex' | 'lumen-2-pro' | 'lumen-2-max', upstream: string): FalFamily {
  const flex = model === 'lumen-2-flex';
  const flexOnly: Record<string, FieldRule> = flex
    ? { steps: { to: 'num_inference_steps' }, guidance: { to: 'guidance_scale' }, prompt_upsampling: { to: 'enable_prompt_expansion' } }
    : { prompt_upsampling: { drop: "false only: fal's FLUX.2 [pro]/[max] have no prompt upsampling switch (true is refused)" } };
  return {
    family: 'lumen-2',
    models: [model],
    defaultUpstreamModel: upstream,
    endpoint: withEdit,
    fields: {
      prompt: { to: 'prompt' },
      resolution: SIZE_AS_IMAGE_SIZE,
      size: SIZE_AS_IMAGE_SIZE,
      width: SIZE_AS_IMAGE_SIZE,
      height: SIZE_AS_IMAGE_SIZE,
      image_urls: { to: 'image_urls', note: 'on the `/edit` endpoint' },
      output_format: { to: 'output_format', note: 'jpeg or png (webp is refused)' },
      n: { drop: 'always 1: one image per task' },
      seed: { to: 'seed' },
      safety_tolerance: { to: 'safety_tolerance', map: (v) => String(v), note: 'as the string "1".."5" (0 is refused)' },
      ...flexOnly,
    },
    derive: (req) => {
      const size = outputSize(req);
      return size ? { image_size: size } : {};
    },
    refine: firstProblem(
      onlyValues('output_format', ['jpeg', 'png'], "fal's FLUX.2 writes"),
      refuseWhen('safety_tolerance', (v) => v === 0, 'fal\'s strictest level is "1"'),
      refuseWhen('prompt_upsampling', (v) => v === true && !flex, "fal's FLUX.2 [pro]/[max] have no prompt upsampling"),
    ),
  };
}

/** pict-image-2 → Nano Banana Pro (`fal-ai/nano-banana-pro`, `/edit` with references). */
const pict: FalFamily = {
  family: 'pict-image-2',
  models: ['pict-image-2'],
  defaultUpstreamModel: 'fal-ai/nano-banana-pro',
  endpoint: withEdit,
  fields: {
    prompt: { to: 'prompt' },
    n: { to: 'num_images' },
    size: { to: 'aspect_ratio' },
    resolution: { to: 'resolution', map: (v) => String(v).toUpperCase(), note: '1k → "1K", 2k → "2K", 4k → "4K"' },
    image_urls: { to: 'image_urls', note: 'on the `/edit` endpoint (at most 14)' },
  },
  // our result is PNG (the contract's expected format)
  derive: () => ({ output_format: 'png' }),
  refine: firstProblem(
    onlyValues('size', ['21:9', '16:9', '3:2', '4:3', '5:4', '1:1', '4:5', '3:4', '2:3', '9:16'], "fal's Nano Banana Pro takes"),
    refuseWhen('image_urls', (v) => Array.isArray(v) && v.length > 14, "fal's Nano Banana Pro takes at most 14 reference images"),
  ),
};

/** Grok Imagine Image (`xai/grok-imagine-image`; references on `/edit`, one image: guess). */
const GROK_IMAGE = 'xai/grok-imagine-image';
const grokEditImage: FieldRule = { to: 'image_url', map: first, note: 'the one image, on the `/edit` endpoint (guess)' };
const oneImage = refuseWhen('image_urls', (v) => Array.isArray(v) && v.length > 1, "fal's Grok Imagine edits one image");

const sparkImage2: FalFamily = {
  family: 'spark-imagine-image-2.0',
  models: ['spark-imagine-image-2.0'],
  defaultUpstreamModel: GROK_IMAGE,
  endpoint: withEdit,
  fields: {
    prompt: { to: 'prompt' },
    nsfw_check: { drop: 'false only: fal offers no moderation before submission (true is refused)' },
    n: { to: 'num_images', note: '1..4' },
    aspect_ratio: { to: 'aspect_ratio', map: (v) => (v === 'auto' ? undefined : v), note: '`auto` is not sent (fal chooses, 1:1 by default)' },
    resolution: { drop: "1k only: fal's Grok Imagine has no resolution choice (2k is refused)" },
    quality: { drop: "fal's Grok Imagine has no quality choice (`low` is refused)" },
    image_urls: grokEditImage,
  },
  derive: () => ({ output_format: 'png' }),
  refine: firstProblem(
    refuseWhen('nsfw_check', (v) => v === true, 'fal offers no moderation before submission'),
    refuseWhen('n', (v) => typeof v === 'number' && v > 4, "fal's Grok Imagine makes at most 4 images per request"),
    onlyValues('resolution', ['1k'], "fal's Grok Imagine makes"),
    onlyValues('quality', ['medium'], "fal's Grok Imagine makes"),
    oneImage,
  ),
};

const sparkImagine: FalFamily = {
  family: 'spark-imagine-1.5',
  models: ['spark-imagine-1.5-main', 'spark-imagine-image', 'spark-imagine-image-quality'],
  defaultUpstreamModel: GROK_IMAGE,
  endpoint: withEdit,
  fields: {
    prompt: { to: 'prompt' },
    size: { to: 'aspect_ratio', map: (v, req) => (imagesOf(req).length ? undefined : v), note: 'not with an image (the edit keeps its ratio)' },
    n: { to: 'num_images' },
    image_urls: grokEditImage,
  },
  derive: () => ({ output_format: 'png' }),
  refine: oneImage,
};

/** Seedream (`fal-ai/bytedance/seedream/v4.5` for pro, v4 for lite): `/text-to-image`, `/edit`. */
function dream(model: 'dream-5-0-pro' | 'dream-5-0-lite', upstream: string): FalFamily {
  return {
    family: 'dream-5-0',
    models: [model],
    defaultUpstreamModel: upstream,
    endpoint: (base, req) => `${base}/${imagesOf(req).length ? 'edit' : 'text-to-image'}`,
    fields: {
      prompt: { to: 'prompt' },
      size: SIZE_AS_IMAGE_SIZE,
      resolution: SIZE_AS_IMAGE_SIZE,
      n: { to: 'num_images' },
      image_urls: { to: 'image_urls', note: 'on the `/edit` endpoint' },
    },
    derive: (req) => {
      const size = outputSize(req);
      return size ? { image_size: size } : {};
    },
  };
}

export const FAL_IMAGE_FAMILIES: readonly FalFamily[] = [
  lumen('lumen-2-flex', 'fal-ai/flux-2-flex'),
  lumen('lumen-2-pro', 'fal-ai/flux-2-pro'),
  lumen('lumen-2-max', 'fal-ai/flux-2-max'),
  pict,
  sparkImage2,
  sparkImagine,
  dream('dream-5-0-pro', 'fal-ai/bytedance/seedream/v4.5'),
  dream('dream-5-0-lite', 'fal-ai/bytedance/seedream/v4'),
];
