import { isObj, type Json } from '../../sim-json';
/**
 * The video-synthesis body as Model Studio checks it, per model, answering its own 400
 * (`{code: "InvalidParameter", message}`). Sources: the Wan image-to-video API reference
 * (https://www.alibabacloud.com/help/en/model-studio/image-to-video-api-reference/: `input.img_url` required,
 * resolution 720P/1080P, duration 2..15, `audio`, `shot_type`, seed 0..2147483647), the Wan2.7 video-editing reference
 * (https://www.alibabacloud.com/help/en/model-studio/wan-video-editing-api-reference: `input.media` of one `video`
 * and up to 4 `reference_image`, duration 0 or 2..10, `audio_setting` auto/origin, `ratio`) and the reference-to-video
 * reference (https://www.alibabacloud.com/help/en/model-studio/wan-video-to-video-api-reference: up to 5
 * `reference_image`/`reference_video` items, duration 2..15). Stricter than Model Studio on purpose: a field the
 * model does not document is refused (a translation that leaks one of our fields must fail a test).
 */
export type DashModel = 'wan2.6-i2v-flash' | 'wan2.7-videoedit' | 'wan2.7-r2v';
export const DASH_SIM_MODELS: readonly DashModel[] = ['wan2.6-i2v-flash', 'wan2.7-videoedit', 'wan2.7-r2v'];

type Check = (v: unknown) => string | undefined;

const str =
  (max: number): Check =>
  (v) =>
    typeof v !== 'string' ? 'must be a string' : v.length > max ? `must be at most ${max} characters` : undefined;
const bool: Check = (v) => (typeof v === 'boolean' ? undefined : 'must be a boolean');
const int =
  (min: number, max: number, also?: number): Check =>
  (v) =>
    Number.isInteger(v) && (((v as number) >= min && (v as number) <= max) || v === also) ? undefined : `must be an integer in [${min}, ${max}]`;
const oneOf =
  (...words: string[]): Check =>
  (v) =>
    typeof v === 'string' && words.includes(v) ? undefined : `must be one of ${words.join(', ')}`;
const url: Check = (v) => (typeof v === 'string' && /^https?:\/\/\S+$/i.test(v) ? undefined : 'must be an http(s) URL');
const image: Check = (v) =>
  typeof v === 'string' && /^(https?:\/\/\S+|data:image\/[a-z]+;base64,[A-Za-z0-9+/]+={0,2})$/i.test(v)
    ? undefined
    : 'must be a URL or data:{MIME};base64,{data}';

const RES = oneOf('720P', '1080P');
const RATIO = oneOf('16:9', '9:16', '1:1', '4:3', '3:4');
const SEED = int(0, 2147483647);

interface Schema {
  input: Record<string, Check>;
  parameters: Record<string, Check>;
  required: string[];
  /** `input.media`: allowed item types and their most. */
  media?: { types: Record<string, number>; max: number; required: string[] };
}

const SCHEMAS: Record<DashModel, Schema> = {
  'wan2.6-i2v-flash': {
    input: { prompt: str(1500), negative_prompt: str(500), img_url: image, audio_url: url },
    parameters: { resolution: RES, duration: int(2, 15), prompt_extend: bool, shot_type: oneOf('single', 'multi'), audio: bool, watermark: bool, seed: SEED },
    required: ['img_url'],
  },
  'wan2.7-videoedit': {
    input: { prompt: str(5000), negative_prompt: str(500), media: () => undefined },
    parameters: {
      resolution: RES,
      ratio: RATIO,
      duration: int(2, 10, 0),
      audio_setting: oneOf('auto', 'origin'),
      prompt_extend: bool,
      watermark: bool,
      seed: SEED,
    },
    required: ['media'],
    media: { types: { video: 1, reference_image: 4 }, max: 5, required: ['video'] },
  },
  'wan2.7-r2v': {
    input: { prompt: str(5000), negative_prompt: str(500), media: () => undefined },
    parameters: { resolution: RES, ratio: RATIO, duration: int(2, 15), prompt_extend: bool, watermark: bool, seed: SEED },
    required: ['prompt', 'media'],
    media: { types: { reference_image: 5, reference_video: 5, first_frame: 1 }, max: 6, required: [] },
  },
};

function checkMedia(spec: NonNullable<Schema['media']>, media: unknown): string | undefined {
  if (!Array.isArray(media) || media.length === 0) return 'input.media must be a non-empty array';
  if (media.length > spec.max) return `input.media has more than ${spec.max} items`;
  const counts: Record<string, number> = {};
  for (const [i, item] of media.entries()) {
    if (!isObj(item)) return `input.media[${i}] must be an object`;
    const type = String(item.type);
    if (!(type in spec.types)) return `input.media[${i}].type must be one of ${Object.keys(spec.types).join(', ')}`;
    if (url(item.url)) return `input.media[${i}].url must be an http(s) URL`;
    for (const k of Object.keys(item)) {
      const voice = k === 'reference_voice' && type === 'reference_image';
      if (k !== 'type' && k !== 'url' && !voice) return `input.media[${i}].${k} is not a supported field`;
      if (voice && url(item[k])) return `input.media[${i}].reference_voice must be an http(s) URL`;
    }
    counts[type] = (counts[type] ?? 0) + 1;
    if (counts[type] > spec.types[type]) return `input.media has more than ${spec.types[type]} ${type} items`;
  }
  const missing = spec.required.find((t) => !counts[t]);
  return missing ? `input.media needs a ${missing} item` : undefined;
}

function checkPart(part: 'input' | 'parameters', rules: Record<string, Check>, value: unknown): string | undefined {
  if (value === undefined && part === 'parameters') return undefined;
  if (!isObj(value)) return `${part} must be an object`;
  for (const [k, v] of Object.entries(value)) {
    const check = rules[k];
    if (!check) return `${part}.${k} is not a supported field`;
    const problem = check(v);
    if (problem) return `${part}.${k} ${problem}`;
  }
  return undefined;
}

/** The first problem of a submit body (Model Studio answers one message), or undefined. */
export function validateDashBody(body: unknown): { model?: DashModel; problem?: string } {
  if (!isObj(body)) return { problem: 'The request body is not a JSON object' };
  if (typeof body.model !== 'string') return { problem: 'Field required: model' };
  if (!(DASH_SIM_MODELS as readonly string[]).includes(body.model)) return { problem: 'Model not exist.' };
  const model = body.model as DashModel;
  const s = SCHEMAS[model];
  const extra = Object.keys(body).find((k) => k !== 'model' && k !== 'input' && k !== 'parameters');
  if (extra) return { model, problem: `${extra} is not a supported field` };
  const problem = checkPart('input', s.input, body.input) ?? checkPart('parameters', s.parameters, body.parameters);
  if (problem) return { model, problem };
  const input = body.input as Json;
  const missing = s.required.find((k) => input[k] === undefined);
  if (missing) return { model, problem: `Field required: input.${missing}` };
  return { model, problem: s.media ? checkMedia(s.media, input.media) : undefined };
}
