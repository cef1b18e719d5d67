import { isObj, type Json } from '../../sim-json';
/**
 * The `predictLongRunning` body of Veo on the Gemini API as the API checks it, each problem answered as Google's
 * `400 INVALID_ARGUMENT`. Sources: the Gemini API video guide (https://ai.google.dev/gemini-api/docs/video: the
 * parameters table — aspectRatio "16:9"/"9:16", resolution "720p"/"1080p"/"4k" with 1080p and 4k at 8 seconds only,
 * durationSeconds 4/6/8, negativePrompt, personGeneration, referenceImages up to 3 at 8 seconds) and the SDK's
 * Gemini-API converters (googleapis/js-genai `_models_converters.ts`: generateVideosSourceToMldev,
 * generateVideosConfigToMldev, imageToMldev — `image` is `{bytesBase64Encoded, mimeType}`, no gcsUri; `seed`,
 * `generateAudio`, `fps` are refused on the Gemini API). The wording of each message is a guess.
 */

export const GEMINI_SIM_MODELS = ['veo-3.1-generate-preview', 'veo-3.1-fast-generate-preview', 'veo-3.0-generate-001', 'veo-3.0-fast-generate-001'] as const;

export interface VeoJob {
  prompt: string;
  seconds: number;
  aspectRatio: string;
  resolution: string;
}

/** A refused body: the message of Google's 400 INVALID_ARGUMENT. */
export class VeoRefusal extends Error {}
const refuse = (message: string): never => {
  throw new VeoRefusal(message);
};

const PARAMETERS: Record<string, (v: unknown, at: string) => void> = {
  aspectRatio: (v, at) => oneOf(v, at, ['16:9', '9:16']),
  resolution: (v, at) => oneOf(v, at, ['720p', '1080p', '4k']),
  // proto3 JSON takes an int32 as a number or a numeric string; the values are Veo's
  durationSeconds: (v, at) => {
    if (!(typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v))) || ![4, 6, 8].includes(Number(v))) {
      refuse(`The number value for \`${at}\` is out of bound. Please provide a value between 4 and 8, inclusive (4, 6 or 8).`);
    }
  },
  negativePrompt: (v, at) => (typeof v === 'string' ? undefined : refuse(`Invalid value at '${at}' (TYPE_STRING)`)),
  personGeneration: (v, at) => oneOf(v, at, ['allow_all', 'allow_adult', 'dont_allow']),
  enhancePrompt: (v, at) => (typeof v === 'boolean' ? undefined : refuse(`Invalid value at '${at}' (TYPE_BOOL)`)),
  sampleCount: (v, at) => (Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 4 ? undefined : refuse(`\`${at}\` must be between 1 and 4`)),
};

function oneOf(v: unknown, at: string, allowed: readonly string[]): void {
  if (typeof v !== 'string' || !allowed.includes(v)) refuse(`Invalid value for \`${at}\`: ${JSON.stringify(v)}. Supported values: ${allowed.join(', ')}.`);
}

/** `{bytesBase64Encoded, mimeType}` (the Gemini API takes no image URL: gcsUri is Vertex AI's). */
function image(v: unknown, at: string): void {
  if (!isObj(v)) return refuse(`Invalid value at '${at}': expected an image object`);
  for (const k of Object.keys(v)) if (k !== 'bytesBase64Encoded' && k !== 'mimeType') refuse(`\`${k}\` isn't supported by this model (${at}).`);
  if (typeof v.bytesBase64Encoded !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(v.bytesBase64Encoded))
    refuse(`'${at}.bytesBase64Encoded' must be base64 image bytes`);
  oneOf(v.mimeType, `${at}.mimeType`, ['image/png', 'image/jpeg', 'image/webp']);
}

function instance(v: unknown): Json {
  if (!isObj(v)) return refuse("Invalid value at 'instances[0]': expected an object");
  for (const [k, value] of Object.entries(v)) {
    const at = `instances[0].${k}`;
    if (k === 'prompt') {
      if (typeof value !== 'string' || !value.trim()) refuse('`prompt` must be a non-empty string.');
    } else if (k === 'image' || k === 'lastFrame') image(value, at);
    else if (k === 'referenceImages') {
      if (!Array.isArray(value) || value.length < 1 || value.length > 3) refuse('`referenceImages` takes 1 to 3 images.');
      (value as unknown[]).forEach((r, i) => {
        if (!isObj(r)) return refuse(`Invalid value at '${at}[${i}]'`);
        image(r.image, `${at}[${i}].image`);
        oneOf(r.referenceType, `${at}[${i}].referenceType`, ['asset', 'style']);
      });
    } else refuse(`\`${k}\` isn't supported by this model.`);
  }
  if (v.prompt === undefined) refuse('`prompt` is required.');
  return v;
}

/** The job a valid body asks for, or a VeoRefusal. Defaults: 8 seconds, 16:9, 720p (Gemini API video guide). */
export function validateVeoBody(model: string, body: unknown): VeoJob {
  if (!isObj(body)) return refuse('Invalid JSON payload received. Expected an object.');
  for (const k of Object.keys(body))
    if (k !== 'instances' && k !== 'parameters') refuse(`Invalid JSON payload received. Unknown name "${k}": Cannot find field.`);
  if (!Array.isArray(body.instances) || body.instances.length !== 1) refuse('`instances` must hold exactly one instance.');
  const inst = instance((body.instances as unknown[])[0]);
  const params = body.parameters ?? {};
  if (!isObj(params)) return refuse("Invalid value at 'parameters': expected an object");
  for (const [k, v] of Object.entries(params)) {
    const check = PARAMETERS[k];
    if (!check) refuse(`\`${k}\` isn't supported by this model.`);
    else check(v, `parameters.${k}`);
  }
  const seconds = params.durationSeconds === undefined ? 8 : Number(params.durationSeconds);
  const resolution = typeof params.resolution === 'string' ? params.resolution : '720p';
  if (resolution !== '720p' && seconds !== 8) refuse(`\`resolution\` ${resolution} is only supported with \`durationSeconds\` 8.`);
  if (resolution === '4k' && !model.startsWith('veo-3.1')) refuse(`\`resolution\` 4k isn't supported by ${model}.`);
  if (inst.referenceImages !== undefined && seconds !== 8) refuse('`referenceImages` are only supported with `durationSeconds` 8.');
  return { prompt: inst.prompt as string, seconds, resolution, aspectRatio: typeof params.aspectRatio === 'string' ? params.aspectRatio : '16:9' };
}
