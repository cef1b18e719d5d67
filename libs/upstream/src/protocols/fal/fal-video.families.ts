import type { NormalizedRequest } from '@gmg/contracts';
import type { FieldRule } from '../../translation';
import { asString, first, firstProblem, imagesOf, list, onlyValues, refuseWhen, second, type FalFamily } from './fal-rules';

/**
 * Video families on fal. Input names follow each endpoint's page on fal.ai (cited in docs/upstreams/fal.md); the
 * ones marked "(guess)" in the notes could not be confirmed there.
 */

const modeOf = (req: NormalizedRequest): string => (typeof req.derived.mode === 'string' ? req.derived.mode : '');
/** A ratio input only text-to-video takes (with images, the first frame sets the ratio). */
const ratioWithoutImages = (to: string): FieldRule => ({
  to,
  map: (v, req) => (imagesOf(req).length ? undefined : v),
  note: 'text-to-video only (the image sets the ratio)',
});
const refuseTrue = (field: string, why: string) => refuseWhen(field, (v) => v === true, why);
const noWatermark: FieldRule = { drop: 'false only: fal adds no watermark (true is refused)' };
/** The first image as `image_url`, a second one as `end_image_url` (derived). */
const startFrame = (note = 'the first image; a second one goes as `end_image_url`'): FieldRule => ({ to: 'image_url', map: first, note });
const endFrame = (req: NormalizedRequest) => (second(req.upstreamBody.image_urls) ? { end_image_url: second(req.upstreamBody.image_urls) } : {});

/** PixVerse (`fal-ai/pixverse/v5.6`): `/text-to-video`, `/image-to-video`, `/transition`. */
const pixel: FalFamily = {
  family: 'pixel-v6',
  models: ['pixel-v6'],
  defaultUpstreamModel: 'fal-ai/pixverse/v5.6',
  endpoint: (base, req) => `${base}/${{ 'image-to-video': 'image-to-video', transition: 'transition' }[modeOf(req)] ?? 'text-to-video'}`,
  fields: {
    prompt: { to: 'prompt' },
    resolution: { to: 'resolution' },
    duration: { to: 'duration', map: asString, note: 'as the string "5", "8" or "10"' },
    size: { to: 'aspect_ratio', map: (v, req) => (modeOf(req) === 'image-to-video' ? undefined : v), note: 'not with an image (the image sets the ratio)' },
    seed: { to: 'seed' },
    negative_prompt: { to: 'negative_prompt' },
    audio: { to: 'generate_audio_switch', note: '(guess)' },
    watermark: noWatermark,
    motion_mode: { drop: '`normal` is the only motion fal offers' },
    generate_multi_clip_switch: { drop: 'false only (true is refused: not confirmed on fal)' },
    image_urls: { to: 'image_url', map: first, note: 'the first image, on `/image-to-video`' },
    first_frame_image: { to: 'first_image_url', note: 'on `/transition` (guess)' },
    last_frame_image: { to: 'end_image_url', note: 'on `/transition` (guess)' },
    img_references: { refuse: "fal's PixVerse fusion endpoint is not covered" },
    extend_from_task_id: { refuse: 'an extension continues a task of the channel that made it' },
  },
  refine: firstProblem(
    onlyValues('duration', [5, 8, 10], "fal's PixVerse makes"),
    (req) => (modeOf(req) === 'image-to-video' ? undefined : onlyValues('size', ['16:9', '4:3', '1:1', '3:4', '9:16'], "fal's PixVerse takes")(req)),
    refuseTrue('watermark', 'fal adds no watermark'),
    refuseTrue('generate_multi_clip_switch', 'not confirmed on fal'),
  ),
};

/** Veo 3.1 Fast (`fal-ai/veo3.1/fast`, `/image-to-video` with one image). */
const omni: FalFamily = {
  family: 'omni-flash',
  models: ['Omni-Flash-Ext'],
  defaultUpstreamModel: 'fal-ai/veo3.1/fast',
  endpoint: (base, req) => (imagesOf(req).length ? `${base}/image-to-video` : base),
  fields: {
    prompt: { to: 'prompt' },
    duration: { to: 'duration', map: (v) => `${String(v)}s`, note: 'as "4s", "6s" or "8s" (10 is refused)' },
    resolution: { to: 'resolution' },
    aspect_ratio: { to: 'aspect_ratio' },
    image_urls: { to: 'image_url', map: first, note: 'one image, on `/image-to-video` (three: refused)' },
    video_urls: { refuse: "fal's Veo 3.1 takes no motion-reference video" },
  },
  refine: firstProblem(
    onlyValues('duration', [4, 6, 8], "fal's Veo 3.1 makes"),
    refuseWhen('image_urls', (v) => list(v).length > 1, "reference fusion (3 images) is not covered on fal's Veo 3.1 Fast"),
  ),
};

/** Grok Imagine Video (`xai/grok-imagine-video`): `/text-to-video`, `/image-to-video`. */
const sparkVideo: FalFamily = {
  family: 'spark-imagine-1.5-video',
  models: ['spark-imagine-1.5-video-main'],
  defaultUpstreamModel: 'xai/grok-imagine-video',
  endpoint: (base, req) => `${base}/${imagesOf(req).length ? 'image-to-video' : 'text-to-video'}`,
  fields: {
    prompt: { to: 'prompt' },
    size: ratioWithoutImages('aspect_ratio'),
    duration: { to: 'duration' },
    resolution: { to: 'resolution' },
    image_urls: { to: 'image_url', map: first, note: 'one image, on `/image-to-video`' },
  },
  refine: refuseWhen('image_urls', (v) => list(v).length > 1, "fal's Grok Imagine Video takes one image"),
};

/** Wan 2.6 image-to-video flash (`wan/v2.6/image-to-video/flash`, guess). */
const waveI2v: FalFamily = {
  family: 'wave2.6',
  models: ['wave2.6-i2v-flash'],
  defaultUpstreamModel: 'wan/v2.6/image-to-video/flash',
  fields: {
    image_urls: { to: 'image_url', map: first },
    prompt: { to: 'prompt' },
    negative_prompt: { to: 'negative_prompt' },
    resolution: { to: 'resolution' },
    duration: { to: 'duration', map: asString, note: 'as the string "5", "10" or "15"' },
    audio: { drop: 'true only: fal makes the sound track (false is refused)' },
    audio_url: { to: 'audio_url' },
    prompt_extend: { to: 'enable_prompt_expansion' },
    shot_type: { to: 'multi_shots', map: (v) => v === 'multi', note: 'multi → true' },
    seed: { to: 'seed' },
    watermark: noWatermark,
  },
  refine: firstProblem(
    (req) =>
      req.upstreamBody.prompt === undefined
        ? { field: 'prompt', message: `\`prompt\` is required for ${req.requestedModel} through the fal protocol (fal's Wan 2.6 needs one)` }
        : undefined,
    onlyValues('duration', [5, 10, 15], "fal's Wan 2.6 makes"),
    refuseWhen('audio', (v) => v === false, 'fal makes the sound track'),
    refuseTrue('watermark', 'fal adds no watermark'),
  ),
};

const lowerCase = (v: unknown) => String(v).toLowerCase();

/** Wan 2.7 video edit (`fal-ai/wan/v2.7/video-edit`, guess). */
const waveEdit: FalFamily = {
  family: 'wave2.7',
  models: ['wave2.7-videoedit'],
  defaultUpstreamModel: 'fal-ai/wan/v2.7/video-edit',
  fields: {
    video_urls: { to: 'video_url', map: first },
    prompt: { to: 'prompt' },
    image_urls: { to: 'image_urls', note: 'reference images (guess)' },
    resolution: { to: 'resolution', map: lowerCase, note: '720P → "720p"' },
    duration: { to: 'duration' },
  },
};

/** Wan 2.7 reference-to-video (`fal-ai/wan/v2.7/reference-to-video`, guess). */
const waveR2v: FalFamily = {
  family: 'wave2.7',
  models: ['wave2.7-r2v'],
  defaultUpstreamModel: 'fal-ai/wan/v2.7/reference-to-video',
  fields: {
    prompt: { to: 'prompt' },
    image_with_roles: { to: 'image_urls', map: (v) => list(v).map((x) => (x as { url: string }).url), note: 'the urls (every role is a reference image)' },
    reference_voice_url: { refuse: 'not confirmed on fal' },
    resolution: { to: 'resolution', map: lowerCase, note: '720P → "720p"' },
    duration: { to: 'duration' },
  },
};

/** Kling O1 (`fal-ai/kling-video/o1`, std on `/standard`): `/image-to-video` with frames, else `/reference-to-video`. */
const kinetic: FalFamily = {
  family: 'kinetic',
  models: ['kinetic-video-o1'],
  defaultUpstreamModel: 'fal-ai/kling-video/o1',
  endpoint: (base, req) => `${base}${req.upstreamBody.mode === 'pro' ? '' : '/standard'}/${imagesOf(req).length ? 'image-to-video' : 'reference-to-video'}`,
  fields: {
    prompt: { to: 'prompt', map: (v) => String(v).replace(/<<<image_(\d+)>>>/g, '@Image$1'), note: '`<<<image_N>>>` → `@ImageN`' },
    mode: { drop: 'chooses the endpoint: std → `/standard`, pro → the base' },
    duration: { to: 'duration', map: asString, note: 'as the string "5" or "10"' },
    aspect_ratio: ratioWithoutImages('aspect_ratio'),
    image_urls: { to: 'start_image_url', map: first, note: 'the first image; a second one goes as `end_image_url`' },
    video_list: { refuse: "fal's Kling O1 video references are not covered" },
  },
  derive: endFrame,
};

/** Vidu Q3 (`fal-ai/vidu/q3`, turbo `fal-ai/vidu/q3/turbo`; guess): text, one image, or start and end frames. */
function clip(model: 'clipq3-pro' | 'clipq3-turbo', upstream: string): FalFamily {
  const path = (n: number) => (n === 2 ? 'start-end-to-video' : n === 1 ? 'image-to-video' : 'text-to-video');
  return {
    family: 'clipq3',
    models: [model],
    defaultUpstreamModel: upstream,
    endpoint: (base, req) => `${base}/${path(imagesOf(req).length)}`,
    fields: {
      prompt: { to: 'prompt' },
      duration: { to: 'duration' },
      resolution: { to: 'resolution' },
      aspect_ratio: { to: 'aspect_ratio' },
      image_urls: {
        to: 'image_url',
        map: (v) => (list(v).length === 1 ? first(v) : undefined),
        note: 'one image; two go as `start_image_url`, `end_image_url`',
      },
      audio: { to: 'audio', note: '(guess)' },
      seed: { to: 'seed' },
    },
    derive: (req) => {
      const imgs = imagesOf(req);
      return imgs.length === 2 ? { start_image_url: imgs[0], end_image_url: imgs[1] } : {};
    },
  };
}

/** Seedance 1.0 Pro (`fal-ai/bytedance/seedance/v1/pro[/fast]`): `/text-to-video`, `/image-to-video`. */
function motion(model: 'motion-1-0-pro-fast' | 'motion-1-0-pro-quality', upstream: string): FalFamily {
  return {
    family: 'motion-1-0-pro',
    models: [model],
    defaultUpstreamModel: upstream,
    endpoint: (base, req) => `${base}/${imagesOf(req).length ? 'image-to-video' : 'text-to-video'}`,
    fields: {
      nsfw_check: { drop: 'false only: fal offers no moderation before submission (true is refused)' },
      prompt: { to: 'prompt' },
      duration: { to: 'duration', map: asString, note: 'as the string "2".."12"' },
      aspect_ratio: ratioWithoutImages('aspect_ratio'),
      resolution: { to: 'resolution' },
      image_urls: startFrame(),
    },
    derive: endFrame,
    refine: refuseTrue('nsfw_check', 'fal offers no moderation before submission'),
  };
}

const REEL_REFERENCES = ['reference_image_urls', 'reference_video_urls', 'reference_audio_urls', 'image_with_roles', 'video_urls'];

/** Seedance 2.0 (`bytedance/seedance-2.0[/fast]`): `/text-to-video`, `/image-to-video`, `/reference-to-video`. */
function reel(model: 'reel-v4-fast' | 'reel-v4-std', upstream: string): FalFamily {
  const path = (req: NormalizedRequest) =>
    modeOf(req) === 'image-to-video'
      ? 'image-to-video'
      : REEL_REFERENCES.some((f) => req.upstreamBody[f] !== undefined)
        ? 'reference-to-video'
        : 'text-to-video';
  const urls = (v: unknown) => list(v).map((x) => (typeof x === 'string' ? x : (x as { url: string }).url));
  return {
    family: 'reel-v4',
    models: [model],
    defaultUpstreamModel: upstream,
    endpoint: (base, req) => `${base}/${path(req)}`,
    fields: {
      prompt: { to: 'prompt' },
      duration: { to: 'duration', map: asString, note: 'as the string "4", "5", "8", "10", "12" or "15"' },
      resolution: { to: 'resolution', note: '480p or 720p (1080p is refused)' },
      aspect_ratio: { to: 'aspect_ratio', map: (v, req) => (modeOf(req) === 'image-to-video' ? undefined : v), note: 'not with frames' },
      prompt_optimizer: { drop: "fal's Seedance 2.0 has no prompt optimizer switch" },
      image_urls: startFrame(),
      first_frame_image: { to: 'image_url', note: 'on `/image-to-video`' },
      last_frame_image: { to: 'end_image_url', note: 'on `/image-to-video`' },
      reference_image_urls: { to: 'image_urls', note: 'on `/reference-to-video`' },
      image_with_roles: { to: 'image_urls', map: urls, note: 'the urls, on `/reference-to-video`' },
      reference_video_urls: { to: 'video_urls', note: 'on `/reference-to-video`' },
      video_urls: { to: 'video_urls', note: 'on `/reference-to-video`' },
      reference_audio_urls: { to: 'audio_urls', note: 'on `/reference-to-video`' },
    },
    derive: endFrame,
    refine: firstProblem(
      onlyValues('duration', [4, 5, 8, 10, 12, 15], "fal's Seedance 2.0 makes"),
      onlyValues('resolution', ['480p', '720p'], "fal's Seedance 2.0 makes"),
      refuseWhen('image_with_roles', (_v, req) => req.upstreamBody.reference_image_urls !== undefined, 'send the reference images in one field'),
      refuseWhen('video_urls', (_v, req) => req.upstreamBody.reference_video_urls !== undefined, 'send the reference videos in one field'),
      refuseWhen('first_frame_image', (_v, req) => req.upstreamBody.image_urls !== undefined, 'send the frames in one field'),
    ),
  };
}

export const FAL_VIDEO_FAMILIES: readonly FalFamily[] = [
  pixel,
  omni,
  sparkVideo,
  waveI2v,
  waveEdit,
  waveR2v,
  kinetic,
  clip('clipq3-pro', 'fal-ai/vidu/q3'),
  clip('clipq3-turbo', 'fal-ai/vidu/q3/turbo'),
  motion('motion-1-0-pro-fast', 'fal-ai/bytedance/seedance/v1/pro/fast'),
  motion('motion-1-0-pro-quality', 'fal-ai/bytedance/seedance/v1/pro'),
  reel('reel-v4-fast', 'bytedance/seedance-2.0/fast'),
  reel('reel-v4-std', 'bytedance/seedance-2.0'),
];
