import type { NormalizedRequest } from '@gmg/contracts';
import type { FamilyTranslation, FieldRule, ProtocolTranslation, Unsupported } from '../../translation';

/**
 * The OpenAI-compatible media API (images and the `/v1/videos` job), per model family. Shapes follow OpenAI's API
 * reference as the official SDK encodes it (openai/openai-node src/resources/images.ts and videos.ts, generated from
 * OpenAI's OpenAPI document) and, for the JSON bodies of `/v1/images/edits` and `/v1/videos`, the OpenAPI document's
 * `EditImageBodyJsonParam` / `CreateVideoJsonBody` (as generated into openai-client-base on docs.rs).
 */
const DOCS = [
  'https://platform.openai.com/docs/api-reference/images/create',
  'https://platform.openai.com/docs/api-reference/images/createEdit',
  'https://platform.openai.com/docs/api-reference/videos/create',
  'https://developers.openai.com/api/docs/guides/video-generation',
  'https://github.com/openai/openai-node/blob/master/src/resources/images.ts',
  'https://github.com/openai/openai-node/blob/master/src/resources/videos.ts',
  'https://docs.rs/crate/openai-client-base/latest/source/docs/CreateVideoJsonBody.md',
];

/** gpt-image-2 sizes (openai-node images.ts `size`): WxH, both multiples of 16, ratio within 1:3..3:1, at most 3840x2160. */
const MAX_EDGE = 3840;
const MAX_PIXELS = 3840 * 2160;

/** Our request's output size as the vendor's `size`: `WxH` from what the contract derived, else `auto`. */
const imageSize = (req: NormalizedRequest): string => (req.expected.width && req.expected.height ? `${req.expected.width}x${req.expected.height}` : 'auto');

/** The first problem of the derived size for gpt-image-2, named on `field` (the field that chose the size). */
function gptImage2Size(req: NormalizedRequest, field: string): Unsupported | undefined {
  const { width: w, height: h } = req.expected;
  if (!w || !h) return undefined;
  const fits = w % 16 === 0 && h % 16 === 0 && Math.max(w, h) <= MAX_EDGE && w * h <= MAX_PIXELS && Math.max(w, h) / Math.min(w, h) <= 3;
  if (fits) return undefined;
  return {
    field,
    message: `\`${field}\`: ${w}x${h} is beyond what the openai protocol's image models render (sides multiples of 16, ratio within 1:3..3:1, at most 3840x2160)`,
  };
}

/** Reference images as the JSON edit body's `images` (a request carrying them goes to `/v1/images/edits`). */
const IMAGE_REFS: FieldRule = {
  to: 'images',
  map: (v) => (v as string[]).map((image_url) => ({ image_url })),
  note: 'as `[{image_url}]`, sent to `/v1/images/edits` in its JSON form',
};
const IN_SIZE = { drop: 'carried in the vendor\u2019s `size` (`WxH` of the output the contract derived)' };

const pict: FamilyTranslation = {
  family: 'pict-image-2',
  models: ['pict-image-2'],
  defaultUpstreamModel: 'gpt-image-2',
  fields: { prompt: { to: 'prompt' }, n: { to: 'n' }, size: IN_SIZE, resolution: IN_SIZE, image_urls: IMAGE_REFS },
  // png is the vendor's default and our contract's format: nothing more to send
  derive: (req) => ({ size: imageSize(req) }),
  refine: (req) => gptImage2Size(req, 'resolution'),
};

const spark2: FamilyTranslation = {
  family: 'spark-imagine-image-2.0',
  models: ['spark-imagine-image-2.0'],
  fields: {
    prompt: { to: 'prompt' },
    n: { to: 'n' },
    aspect_ratio: { drop: 'carried in the vendor\u2019s `size` (`WxH`, or `auto` for `auto`)' },
    resolution: IN_SIZE,
    quality: { to: 'quality', note: '`low` and `medium` are GPT image qualities' },
    nsfw_check: { drop: 'the vendor moderates every prompt and input image itself (`moderation: auto`)' },
    image_urls: IMAGE_REFS,
  },
  derive: (req) => ({ size: imageSize(req) }),
  refine: (req) => gptImage2Size(req, 'resolution'),
};

const dream: FamilyTranslation = {
  family: 'dream-5-0',
  models: ['dream-5-0-pro', 'dream-5-0-lite'],
  fields: { prompt: { to: 'prompt' }, n: { to: 'n' }, size: IN_SIZE, resolution: IN_SIZE, image_urls: IMAGE_REFS },
  // our contract delivers jpeg; the vendor's default is png
  derive: (req) => ({ size: imageSize(req), output_format: 'jpeg' }),
  refine: (req) => gptImage2Size(req, 'resolution'),
};

/** A body value as text (the contract validated it: a string or a number). */
const text = (v: unknown, dflt: string): string => (typeof v === 'string' || typeof v === 'number' ? String(v) : dflt);

/** Sora's `seconds` (a string) and `size` (openai-node videos.ts `VideoSeconds`, `VideoSize`). */
const SORA_SECONDS = [4, 8, 12];
const SORA_720P: Record<string, string> = { '16:9': '1280x720', '9:16': '720x1280' };

function soraDuration(req: NormalizedRequest): Unsupported | undefined {
  const d = req.upstreamBody.duration;
  if (d === undefined || SORA_SECONDS.includes(Number(d))) return undefined;
  return { field: 'duration', message: `\`duration\` ${text(d, '?')} is not one the openai protocol's video models render (4, 8 or 12 seconds)` };
}

function soraFrame(req: NormalizedRequest, ratioField: string): Unsupported | undefined {
  const res = text(req.upstreamBody.resolution, '').toLowerCase();
  if (res !== '720p') return { field: 'resolution', message: `\`resolution\` ${res} is not carried by the openai protocol (720p only: 1280x720 or 720x1280)` };
  const ratio = text(req.upstreamBody[ratioField], '16:9');
  if (!SORA_720P[ratio]) return { field: ratioField, message: `\`${ratioField}\` ${ratio} is not carried by the openai protocol (16:9 or 9:16)` };
  const refs = req.upstreamBody.image_urls;
  if (Array.isArray(refs) && refs.length > 1) return { field: 'image_urls', message: '`image_urls`: the openai protocol takes one reference image' };
  return undefined;
}

const SECONDS: FieldRule = { to: 'seconds', map: (v) => String(v), note: 'a string: "4", "8" or "12"' };
const FIRST_REF: FieldRule = {
  to: 'input_reference',
  map: (v) => ({ image_url: (v as string[])[0] }),
  note: 'as `{image_url}`, one image; OpenAI asks it to match the output size',
};
const IN_VIDEO_SIZE = { drop: 'carried in the vendor\u2019s `size` (1280x720 or 720x1280)' };

const omni: FamilyTranslation = {
  family: 'omni-flash',
  models: ['Omni-Flash-Ext'],
  defaultUpstreamModel: 'sora-2',
  fields: {
    prompt: { to: 'prompt' },
    duration: SECONDS,
    resolution: IN_VIDEO_SIZE,
    aspect_ratio: IN_VIDEO_SIZE,
    image_urls: FIRST_REF,
    video_urls: { refuse: 'the vendor\u2019s create call takes no reference video' },
  },
  derive: (req) => ({ size: SORA_720P[text(req.upstreamBody.aspect_ratio, '16:9')] }),
  refine: (req) => soraDuration(req) ?? soraFrame(req, 'aspect_ratio'),
};

const sparkVideo: FamilyTranslation = {
  family: 'spark-imagine-1.5-video',
  models: ['spark-imagine-1.5-video-main'],
  defaultUpstreamModel: 'sora-2',
  fields: { prompt: { to: 'prompt' }, duration: SECONDS, resolution: IN_VIDEO_SIZE, size: IN_VIDEO_SIZE, image_urls: FIRST_REF },
  derive: (req) => ({ size: SORA_720P[text(req.upstreamBody.size, '16:9')] }),
  refine: (req) => soraDuration(req) ?? soraFrame(req, 'size'),
};

export const OPENAI_MEDIA_TRANSLATION: ProtocolTranslation = {
  protocol: 'openai',
  docs: DOCS,
  families: [pict, spark2, dream, omni, sparkVideo],
};
