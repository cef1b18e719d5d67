/**
 * The request bodies ModelArk checks, with its 400 answer `{error: {code: "InvalidParameter", message, param, type:
 * "BadRequest"}}`. Sources: BytePlus ModelArk's video generation API reference
 * (https://docs.byteplus.com/en/docs/ModelArk/1520757) and, for Seedream, resellers' copies of Ark's image reference
 * (https://powower.mintlify.app/en/byteplus/image, https://doc-en.302.ai/385938976e0). Stricter than Ark on one point, on purpose (a translation that
 * leaks one of our fields must fail a test): a field the reference does not list is refused.
 */
import { isCallbackUrl } from '../vendor-sim-kit';

export class ArkRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param?: string,
  ) {
    super(message);
  }
}

type Body = Record<string, unknown>;

const invalid = (param: string, why: string): never => {
  throw new ArkRefusal(400, 'InvalidParameter', `The parameter \`${param}\` specified in the request is not valid: ${why}.`, param);
};

export const SEEDANCE_MODELS = ['seedance-1-0-pro-250528', 'seedance-1-0-pro-fast-251015'];
export const SEEDREAM_MODELS: Record<string, { minPixels: number }> = {
  'seedream-4-0-250828': { minPixels: 1280 * 720 },
  'seedream-4-5-251128': { minPixels: 2560 * 1440 },
};
const MAX_PIXELS = 4096 * 4096;

const VIDEO_FIELDS = [
  'model',
  'content',
  'callback_url',
  'return_last_frame',
  'service_tier',
  'execution_expires_after',
  'generate_audio',
  'draft',
  'resolution',
  'ratio',
  'duration',
  'frames',
  'seed',
  'camera_fixed',
  'watermark',
];
const IMAGE_FIELDS = [
  'model',
  'prompt',
  'image',
  'size',
  'seed',
  'sequential_image_generation',
  'sequential_image_generation_options',
  'stream',
  'response_format',
  'watermark',
];

function known(body: unknown, fields: string[]): Body {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return invalid('body', 'a JSON object is expected');
  const b = body as Body;
  const extra = Object.keys(b).find((k) => !fields.includes(k));
  if (extra) invalid(extra, 'unknown parameter');
  return b;
}

const oneOf = (b: Body, f: string, values: readonly unknown[]) => {
  if (b[f] !== undefined && !values.includes(b[f])) invalid(f, `expected one of ${values.join(', ')}`);
};
const bool = (b: Body, f: string) => {
  if (b[f] !== undefined && typeof b[f] !== 'boolean') invalid(f, 'a boolean is expected');
};
const int = (b: Body, f: string, min: number, max: number) => {
  const v = b[f];
  if (v !== undefined && (!Number.isInteger(v) || (v as number) < min || (v as number) > max)) invalid(f, `an integer in [${min}, ${max}] is expected`);
};
const isMediaUrl = (v: unknown): boolean => typeof v === 'string' && (/^https?:\/\/\S+$/i.test(v) || /^data:image\/[a-z]+;base64,/.test(v));

export interface SeedanceCall {
  model: string;
  prompt: string;
  frames: number;
  /** Where Ark posts the task when its status changes (`callback_url`). */
  callbackUrl?: string;
  resolution: string;
  ratio: string;
  duration: number;
}

/** `POST /api/v3/contents/generations/tasks` for Seedance 1.0 pro / pro fast. */
export function validateSeedance(body: unknown): SeedanceCall {
  const b = known(body, VIDEO_FIELDS);
  if (typeof b.model !== 'string' || !SEEDANCE_MODELS.includes(b.model)) {
    const m = typeof b.model === 'string' ? b.model.slice(0, 100) : '';
    throw new ArkRefusal(404, 'InvalidEndpointOrModel.NotFound', `The model or endpoint ${m} does not exist or you do not have access to it.`);
  }
  if (!Array.isArray(b.content) || b.content.length === 0) return invalid('content', 'a non-empty list is expected');
  let prompt = '';
  const roles: string[] = [];
  for (const [i, part] of (b.content as unknown[]).entries()) {
    const p = (typeof part === 'object' && part !== null ? part : {}) as Body;
    if (p.type === 'text' && typeof p.text === 'string' && Object.keys(p).every((k) => k === 'type' || k === 'text')) prompt += p.text;
    else if (p.type === 'image_url' && isMediaUrl((p.image_url as Body | undefined)?.url)) {
      if (p.role !== undefined && !['first_frame', 'last_frame', 'reference_image'].includes(p.role as string)) invalid(`content[${i}].role`, 'unknown role');
      roles.push((p.role as string | undefined) ?? 'first_frame');
    } else invalid(`content[${i}]`, 'a {type: text, text} or {type: image_url, image_url: {url}, role?} part is expected');
  }
  if (!prompt && roles.length === 0) invalid('content', 'a text or an image is required');
  if (roles.length > 2 || (roles.length === 2 && (roles[0] !== 'first_frame' || roles[1] !== 'last_frame')))
    invalid('content', 'one first_frame, then an optional last_frame');
  if (roles.length === 2 && b.model === 'seedance-1-0-pro-fast-251015') invalid('content', 'this model takes no last_frame');
  oneOf(b, 'resolution', ['480p', '720p', '1080p']);
  oneOf(b, 'ratio', ['16:9', '4:3', '1:1', '3:4', '9:16', '21:9', 'adaptive']);
  int(b, 'duration', 2, 12);
  int(b, 'seed', -1, 4294967295);
  for (const f of ['watermark', 'camera_fixed', 'return_last_frame', 'generate_audio', 'draft']) bool(b, f);
  if (b.duration !== undefined && b.frames !== undefined) invalid('frames', 'duration and frames are exclusive');
  if (b.callback_url !== undefined && !isCallbackUrl(b.callback_url)) invalid('callback_url', 'an http(s) URL is expected');
  return {
    ...(typeof b.callback_url === 'string' ? { callbackUrl: b.callback_url } : {}),
    model: b.model,
    prompt,
    frames: roles.length,
    resolution: (b.resolution as string | undefined) ?? '1080p',
    ratio: (b.ratio as string | undefined) ?? (roles.length ? 'adaptive' : '16:9'),
    duration: (b.duration as number | undefined) ?? 5,
  };
}

export interface SeedreamCall {
  model: string;
  prompt: string;
  width: number;
  height: number;
  asUrl: boolean;
}

const TIER_SIDE: Record<string, number> = { '1K': 1024, '2K': 2048, '4K': 4096 };

/** `POST /api/v3/images/generations` for Seedream 4.0 / 4.5 (one image: sequential generation off). */
export function validateSeedream(body: unknown): SeedreamCall {
  const b = known(body, IMAGE_FIELDS);
  const spec = typeof b.model === 'string' ? SEEDREAM_MODELS[b.model] : undefined;
  if (!spec) throw new ArkRefusal(404, 'InvalidEndpointOrModel.NotFound', 'The model or endpoint does not exist or you do not have access to it.');
  if (typeof b.prompt !== 'string' || !b.prompt) invalid('prompt', 'a non-empty string is required');
  const imgs = b.image === undefined ? [] : Array.isArray(b.image) ? (b.image as unknown[]) : [b.image];
  if (imgs.length > 14 || !imgs.every(isMediaUrl)) invalid('image', 'up to 14 image URLs or base64 data URLs are expected');
  oneOf(b, 'response_format', ['url', 'b64_json']);
  oneOf(b, 'sequential_image_generation', ['auto', 'disabled']);
  oneOf(b, 'stream', [false]);
  bool(b, 'watermark');
  int(b, 'seed', -1, 2147483647);
  const size = (b.size as unknown) ?? '2K';
  const m = typeof size === 'string' ? /^(\d{2,5})x(\d{2,5})$/.exec(size) : null;
  const tier = typeof size === 'string' ? TIER_SIDE[size] : undefined;
  if (!m && !tier) invalid('size', 'expected 1K, 2K, 4K or WIDTHxHEIGHT');
  const [width, height] = m ? [Number(m[1]), Number(m[2])] : [tier!, tier!];
  const px = width * height;
  if (px < spec.minPixels || px > MAX_PIXELS || width / height > 16 || height / width > 16) invalid('size', 'total pixels or aspect ratio out of range');
  return { model: b.model as string, prompt: b.prompt as string, width, height, asUrl: b.response_format !== 'b64_json' };
}
