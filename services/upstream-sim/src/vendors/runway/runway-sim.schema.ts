import { isObj, type Json } from '../../sim-json';
/**
 * Runway's request bodies as its API checks them, for the models the simulator serves, with its 400 answer
 * `{error, issues}`. Shapes: Runway's SDK generated from its OpenAPI spec (runwayml/sdk-node
 * src/resources/{text-to-video,image-to-video}.ts); the `issues` items (`{path, message}`, zod-like) are a guess.
 * Stricter than Runway on purpose (a translation that leaks one of our fields must fail a test): a key the model's
 * schema does not list is refused.
 */

export interface RunwayIssue {
  path: (string | number)[];
  message: string;
}

export type RunwayEndpoint = 'text_to_video' | 'image_to_video';
export const RUNWAY_SIM_MODELS = ['seedance2', 'seedance2_fast', 'veo3.1_fast'] as const;
type RunwayModel = (typeof RUNWAY_SIM_MODELS)[number];

type Check = (v: unknown) => string | undefined;

const text =
  (max: number): Check =>
  (v) =>
    typeof v !== 'string' || v.length === 0 ? 'Expected a non-empty string' : v.length > max ? `String must contain at most ${max} character(s)` : undefined;
const bool: Check = (v) => (typeof v === 'boolean' ? undefined : 'Expected boolean');
const oneOf =
  (values: readonly unknown[]): Check =>
  (v) =>
    values.includes(v) ? undefined : `Invalid enum value. Expected ${values.map((x) => JSON.stringify(x)).join(' | ')}`;
const intIn =
  (min: number, max: number): Check =>
  (v) =>
    Number.isInteger(v) && (v as number) >= min && (v as number) <= max ? undefined : `Expected an integer from ${min} to ${max}`;
/** "A HTTPS URL" (the SDK), or a data URI (Runway's inputs guide, guess). */
const uri: Check = (v) =>
  typeof v === 'string' && (/^https:\/\/\S+$/i.test(v) || /^data:[a-z]+\/[\w.+-]+;base64,/i.test(v)) ? undefined : 'Invalid HTTPS URL';

/** An array of objects, each checked field by field (unknown keys refused). */
const arrayOf =
  (item: Record<string, Check>, max = 9): Check =>
  (v) => {
    if (!Array.isArray(v) || v.length === 0 || v.length > max) return `Expected an array of 1 to ${max} items`;
    for (const x of v) if (!isObj(x) || objectProblem(item, x)) return 'Invalid array item';
    return undefined;
  };
function objectProblem(schema: Record<string, Check>, o: Json): string | undefined {
  for (const [k, v] of Object.entries(o)) {
    const c = schema[k];
    if (!c) return `Unrecognized key: ${k}`;
    const p = c(v);
    if (p) return p;
  }
  return Object.keys(schema).every((k) => k === 'position' || k in o) ? undefined : 'Required';
}

/** `promptImage`: one URL, or frames; Seedance also takes reference images (no position), never mixed with frames. */
const promptImage =
  (seedance: boolean): Check =>
  (v) => {
    if (typeof v === 'string') return uri(v);
    const bad = arrayOf({ uri, position: oneOf(['first', 'last']) }, seedance ? 9 : 2)(v);
    if (bad) return bad;
    const positions = (v as Json[]).map((x) => x.position);
    if (seedance && positions.some((p) => p === undefined) && positions.some((p) => p !== undefined)) return 'Keyframes and references cannot be mixed';
    if (!seedance && (positions[0] !== 'first' || positions.some((p) => p === undefined))) return 'The first image must have position "first"';
    return undefined;
  };

const SEEDANCE_RATIOS_720 = [
  '992:432',
  '864:496',
  '752:560',
  '640:640',
  '560:752',
  '496:864',
  '1470:630',
  '1280:720',
  '1112:834',
  '960:960',
  '834:1112',
  '720:1280',
];
const SEEDANCE_RATIOS = [
  ...SEEDANCE_RATIOS_720,
  ...[
    '2206:946',
    '1920:1080',
    '1664:1248',
    '1440:1440',
    '1248:1664',
    '1080:1920',
    '3840:1646',
    '3840:2160',
    '3840:2880',
    '3840:3840',
    '2880:3840',
    '2160:3840',
  ],
];
const VEO_RATIOS = ['1280:720', '720:1280', '1080:1920', '1920:1080'];

interface Schema {
  fields: Record<string, Check>;
  required: string[];
}

function seedance(model: RunwayModel, endpoint: RunwayEndpoint): Schema {
  const fields: Record<string, Check> = {
    model: oneOf(RUNWAY_SIM_MODELS),
    promptText: text(3500),
    audio: bool,
    // Seedance 2.0 makes 4–15 s (guess: the SDK types it as a number)
    duration: intIn(4, 15),
    ratio: oneOf(model === 'seedance2' ? SEEDANCE_RATIOS : SEEDANCE_RATIOS_720),
    referenceAudio: arrayOf({ type: oneOf(['audio']), uri }, 3),
  };
  if (endpoint === 'image_to_video') return { fields: { ...fields, promptImage: promptImage(true) }, required: ['model', 'promptImage'] };
  return {
    fields: { ...fields, references: arrayOf({ uri }), referenceVideos: arrayOf({ type: oneOf(['video']), uri }, 3) },
    required: ['model', 'promptText'],
  };
}

function veo(endpoint: RunwayEndpoint): Schema {
  const fields: Record<string, Check> = {
    model: oneOf(RUNWAY_SIM_MODELS),
    promptText: text(1000),
    ratio: oneOf(VEO_RATIOS),
    duration: oneOf([4, 6, 8]),
    audio: bool,
    negativePrompt: text(1000),
  };
  if (endpoint === 'image_to_video') return { fields: { ...fields, promptImage: promptImage(false) }, required: ['model', 'promptImage', 'ratio'] };
  return { fields, required: ['model', 'promptText', 'ratio'] };
}

/** Every problem of a body sent to `endpoint` (empty: valid). */
export function validateRunwayBody(endpoint: RunwayEndpoint, body: unknown): RunwayIssue[] {
  if (!isObj(body)) return [{ path: [], message: 'Expected object' }];
  const model = body.model;
  if (!(RUNWAY_SIM_MODELS as readonly unknown[]).includes(model)) return [{ path: ['model'], message: oneOf(RUNWAY_SIM_MODELS)(model)! }];
  const schema = model === 'veo3.1_fast' ? veo(endpoint) : seedance(model as RunwayModel, endpoint);
  const issues: RunwayIssue[] = schema.required.filter((k) => body[k] === undefined).map((k) => ({ path: [k], message: 'Required' }));
  for (const [k, v] of Object.entries(body)) {
    const check = schema.fields[k];
    const message = check ? check(v) : `Unrecognized key: ${k}`;
    if (message) issues.push({ path: [k], message });
  }
  return issues;
}

/** The output size a valid body asks for (`ratio` is `W:H` in pixels); Runway's default when absent is a guess. */
export function sizeOf(body: Json): { width: number; height: number } {
  const m = typeof body.ratio === 'string' ? /^(\d+):(\d+)$/.exec(body.ratio) : null;
  return m ? { width: Number(m[1]), height: Number(m[2]) } : { width: 1280, height: 720 };
}
