import { artgenBillingItem } from '../artgen-billing';
import { ARTGEN_PAN_DIRECTIONS, ARTGEN_PATH_ACTIONS, artgenResultOf, isArtgenFollowUp, type ArtgenPathAction } from '../artgen-custom-id';
import { SCHEMA_VERSION, mediaArray, mediaString, POLL } from './common-fields';
import { defineContract, type Body, type BuiltContract, type ServerRule } from './define-contract';
import type { FieldSpec } from './field-dsl';
import { parseArtgenFlags, ratioProblem, type ArtgenFlags } from './artgen-flags';
import type { ExpectedOutput } from './types';

/** Where the art suite lives; `<base>/<action>` per action, the bare base is imagine. */
export const ARTGEN_BASE_PATH = '/v1/artgen/generations';
/** The version a request without `version` / `--v` runs on (the upstream's default). */
export const ARTGEN_DEFAULT_VERSION = '7';
export const ARTGEN_PROMPT_MAX = 4000;

/**
 * The versions of spec 8, in the spellings the prompt flag `--v` takes: an optional `v`, the major alone or with a
 * `.0` (`8`, `7.0`, `v6.0`), normalized by artgenVersionName exactly as the flag is.
 */
const VERSION_PATTERN = '^(?:[vV]?(?:8(?:\\.[012])?|7(?:\\.0)?|6(?:\\.[01])?|5(?:\\.[012])?)|altstyle[67])$';
const TASK_ID = '^task_[A-Za-z0-9]{1,64}$';

const F = {
  prompt: {
    type: 'string',
    minLength: 1,
    maxLength: ARTGEN_PROMPT_MAX,
    pattern: '\\S',
    patternLabel: 'non-empty after trimming',
    description: 'what to generate; may carry native flags (--ar 16:9, --v 7, --niji 6, --style raw, --fast)',
  },
  size: {
    type: 'string',
    pattern: '^\\d{1,3}:\\d{1,3}$',
    patternLabel: 'a ratio W:H such as 16:9',
    description: 'aspect ratio W:H (same as --ar); default 1:1; at most 4:1',
  },
  version: {
    type: 'string',
    pattern: VERSION_PATTERN,
    patternLabel: 'one of 8.2, 8.1, 8, 7, 6.1, 6, 5.2, 5.1, 5 (optionally with a leading v or a .0), altstyle7 or altstyle6',
    description: `model version (same as --v); default ${ARTGEN_DEFAULT_VERSION}`,
  },
  alt_style: { type: 'boolean', description: 'the alternate (illustration) style, same as --niji; with version 7 or 6 it bills as altstyle7 / altstyle6' },
  speed: {
    type: 'string',
    enum: ['relax', 'fast', 'turbo'],
    description: 'relax (same as omitted), fast or turbo (same as --relax / --fast / --turbo); affects price',
  },
  metadata: {
    type: 'object',
    properties: {},
    additionalProperties: true,
    description: 'free-form client data, stored and passed upstream (bounded by the body cap and the nesting limit)',
  },
  // the edge strips `model: "artgen"` (requests omit it); any other name never reaches the contract
  model: { type: 'forbidden', message: "`model`: the art suite is model 'artgen'; omit `model`" },
  task_id: { type: 'string', pattern: TASK_ID, patternLabel: 'a task id (task_…) of your own art suite task', description: 'the parent task' },
  index: { type: 'integer', minimum: 1, maximum: 4, description: "tile of the parent grid, from 1 (at most the parent's image count)" },
} satisfies Record<string, FieldSpec>;

const ORIGIN_COMMON = { version: F.version, alt_style: F.alt_style, speed: F.speed, metadata: F.metadata, model: F.model };
const FOLLOW_COMMON = { task_id: F.task_id, speed: F.speed, metadata: F.metadata, model: F.model };
const promptOptional = { ...F.prompt, description: "optional new prompt (remix); the parent's prompt is used when omitted" } as FieldSpec;

interface ActionSpec {
  properties: Record<string, FieldSpec>;
  required: string[];
  rules?: ServerRule[];
  estimatedSeconds: number;
}

const ZOOM_RULE: ServerRule = {
  id: 'zoom-ratio',
  description: '`zoom_ratio` is above 1 and at most 2 (1 would not zoom out).',
  check: (b) => (b.zoom_ratio === 1 ? { field: 'zoom_ratio', message: '`zoom_ratio` must be above 1 (at most 2); got 1' } : undefined),
};

const ACTIONS: Record<ArtgenPathAction, ActionSpec> = {
  imagine: {
    properties: { prompt: F.prompt, size: F.size, image_urls: mediaArray('url', { maxItems: 5, description: 'image prompts (0..5)' }), ...ORIGIN_COMMON },
    required: ['prompt'],
    estimatedSeconds: 60,
  },
  blend: {
    properties: {
      image_urls: mediaArray('url', { minItems: 2, maxItems: 4, description: 'the 2..4 images to blend' }),
      dimensions: {
        type: 'string',
        enum: ['PORTRAIT', 'SQUARE', 'LANDSCAPE'],
        default: 'SQUARE',
        description: 'output shape: PORTRAIT (2:3), SQUARE (1:1), LANDSCAPE (3:2)',
      },
      prompt: { type: 'forbidden', message: '`prompt` is not accepted by blend: it mixes images only' },
      ...ORIGIN_COMMON,
    },
    required: ['image_urls'],
    estimatedSeconds: 60,
  },
  describe: {
    properties: {
      image_urls: mediaArray('url', { minItems: 1, maxItems: 1, description: 'the one image to describe' }),
      prompt: { type: 'forbidden', message: '`prompt` is not accepted by describe: it reads an image' },
      ...ORIGIN_COMMON,
    },
    required: ['image_urls'],
    estimatedSeconds: 3,
  },
  edits: {
    properties: {
      prompt: F.prompt,
      image_urls: mediaArray('url', { minItems: 1, maxItems: 4, description: 'the image to edit first, then up to 3 references' }),
      mask_url: mediaString('url-or-base64', 'optional mask: white = area to change'),
      size: F.size,
      ...ORIGIN_COMMON,
    },
    required: ['prompt', 'image_urls'],
    estimatedSeconds: 60,
  },
  upscale: { properties: { ...FOLLOW_COMMON, index: F.index }, required: ['task_id', 'index'], estimatedSeconds: 30 },
  variation: { properties: { ...FOLLOW_COMMON, index: { ...F.index, default: 1 }, prompt: promptOptional }, required: ['task_id'], estimatedSeconds: 60 },
  'high-variation': {
    properties: { ...FOLLOW_COMMON, index: { ...F.index, default: 1 }, prompt: promptOptional },
    required: ['task_id'],
    estimatedSeconds: 60,
  },
  'low-variation': { properties: { ...FOLLOW_COMMON, index: { ...F.index, default: 1 }, prompt: promptOptional }, required: ['task_id'], estimatedSeconds: 60 },
  reroll: { properties: { ...FOLLOW_COMMON, prompt: promptOptional }, required: ['task_id'], estimatedSeconds: 60 },
  zoom: {
    properties: {
      ...FOLLOW_COMMON,
      index: { ...F.index, default: 1 },
      zoom_ratio: { type: 'number', minimum: 1, maximum: 2, default: 2, description: 'zoom-out factor, 1 < r ≤ 2 (buttons: 2 and 1.5)' },
      prompt: promptOptional,
    },
    required: ['task_id'],
    rules: [ZOOM_RULE],
    estimatedSeconds: 60,
  },
  pan: {
    properties: { ...FOLLOW_COMMON, direction: { type: 'string', enum: ARTGEN_PAN_DIRECTIONS, description: 'which side to extend' }, prompt: promptOptional },
    required: ['task_id', 'direction'],
    estimatedSeconds: 60,
  },
  inpaint: { properties: { ...FOLLOW_COMMON, index: { ...F.index, default: 1 } }, required: ['task_id'], estimatedSeconds: 60 },
  modal: {
    properties: {
      ...FOLLOW_COMMON,
      prompt: F.prompt,
      mask_url: mediaString('url-or-base64', 'the region to redraw: a mask image (URL, data URI or Base64), white = redraw'),
    },
    required: ['task_id', 'prompt', 'mask_url'],
    estimatedSeconds: 60,
  },
  video: {
    properties: {
      prompt: { ...F.prompt, description: 'optional motion description' },
      image_urls: mediaArray('url', { minItems: 1, maxItems: 1, description: 'the start image (image-to-video only)' }),
      motion: { type: 'string', enum: ['low', 'high'], default: 'low', description: 'amount of motion' },
      batch_size: { type: 'integer', minimum: 1, maximum: 4, default: 1, description: 'videos to make (charged per video)' },
      resolution: { type: 'string', enum: ['480p', '720p'], default: '480p', description: '720p bills artgen@video-720p' },
      speed: {
        type: 'string',
        enum: ['relax', 'fast'],
        description: 'video runs at its fixed fast speed: relax, fast and omitted are the same (and bill the same); turbo is refused',
      },
      version: F.version,
      alt_style: F.alt_style,
      metadata: F.metadata,
      model: F.model,
    },
    required: ['image_urls'],
    estimatedSeconds: 60,
  },
  'remix-strong': { properties: { ...FOLLOW_COMMON, index: F.index, prompt: promptOptional }, required: ['task_id', 'index'], estimatedSeconds: 60 },
  'remix-subtle': { properties: { ...FOLLOW_COMMON, index: F.index, prompt: promptOptional }, required: ['task_id', 'index'], estimatedSeconds: 60 },
};

/** Prompt flags must parse and agree with the structured fields they duplicate. */
const FLAGS_RULE: ServerRule = {
  id: 'prompt-flags',
  description: 'Native prompt flags must be well-formed (--ar W:H at most 4:1, --v a version) and agree with `size`, `version` and `speed` when both are sent.',
  check(b) {
    if (typeof b.prompt !== 'string') return undefined;
    const parsed = parseArtgenFlags(b.prompt);
    if (!parsed.ok) return { field: 'prompt', message: parsed.message };
    const f = parsed.flags;
    if (f.aspect && typeof b.size === 'string' && b.size !== f.aspect)
      return { field: 'size', message: `\`size\` (${b.size}) disagrees with --ar ${f.aspect} in the prompt; send one of them` };
    if (f.version && typeof b.version === 'string' && artgenVersionName(b.version, false) !== artgenVersionName(f.version, false)) {
      return { field: 'version', message: `\`version\` (${b.version}) disagrees with --v ${f.version} in the prompt; send one of them` };
    }
    if (f.speed && typeof b.speed === 'string' && b.speed !== f.speed)
      return { field: 'speed', message: `\`speed\` (${b.speed}) disagrees with --${f.speed} in the prompt; send one of them` };
    return undefined;
  },
};

const SIZE_RULE: ServerRule = {
  id: 'size-ratio',
  description: '`size` has both sides above 0 and is at most 4:1.',
  check: (b) => {
    const problem = typeof b.size === 'string' ? ratioProblem(b.size) : undefined;
    return problem ? { field: 'size', message: `\`size\` ${problem}` } : undefined;
  },
};

const PARENT_RULE: ServerRule = {
  id: 'parent-task',
  description:
    '`task_id` must be a task of your own account in a state where the action applies (checked by the gateway against the task store before any charge).',
  check: () => undefined,
};

/** The normalized version name (v8.2, v6, altstyle6…) a version text and the alternate-style flag stand for. */
export function artgenVersionName(raw: string, altStyle: boolean): string | undefined {
  const text = raw.trim().toLowerCase();
  if (text === 'altstyle7' || text === 'altstyle6') return text;
  const m = /^v?(\d+)(?:\.(\d+))?$/.exec(text);
  if (!m) return undefined;
  const major = Number(m[1]);
  if (altStyle && (major === 6 || major === 7)) return `altstyle${major}`;
  return m[2] === undefined || m[2] === '0' ? `v${major}` : `v${major}.${m[2]}`;
}

function outputOf(action: ArtgenPathAction, body: Body): ExpectedOutput {
  switch (artgenResultOf(action)) {
    case 'single':
      return { kind: 'images', count: 1, format: 'png' };
    case 'text':
      return { kind: 'text', count: 1 };
    case 'video':
      return { kind: 'videos', count: body.batch_size as number, format: 'mp4' };
    default:
      return { kind: 'images', count: 4, format: 'png' };
  }
}

function originFacts(body: Body, flags: ArtgenFlags): { version: string; altStyle: boolean } {
  const altStyle = body.alt_style === true || (body.alt_style === undefined && flags.altStyle === true);
  const raw = (body.version as string | undefined) ?? flags.version ?? flags.altStyleVersion ?? ARTGEN_DEFAULT_VERSION;
  return { version: artgenVersionName(raw, altStyle) ?? `v${ARTGEN_DEFAULT_VERSION}`, altStyle };
}

/** `relax` is the same as omitted (spec 4.9), and video runs at its one fixed speed: both leave no speed at all. */
function canonicalSpeed(action: ArtgenPathAction, speed: string | undefined): string | undefined {
  return action === 'video' || speed === 'relax' ? undefined : speed;
}

/**
 * What goes upstream: the body with its equal spellings made one — `size` the ratio `size` and `--ar` agree on,
 * `version` in its normalized name (`7.0` → `v7`, without folding the alternate style, which travels in
 * `alt_style`), `speed` only when it is not the same as omitted. Extra fields pass untouched.
 */
function canonicalUpstreamBody(body: Body, derived: Record<string, unknown>): Body {
  const { speed: _speed, ...rest } = body;
  const version = typeof body.version === 'string' ? artgenVersionName(body.version, false) : undefined;
  return {
    ...rest,
    ...(derived.aspect ? { size: derived.aspect } : {}),
    ...(version ? { version } : {}),
    ...(typeof body.speed === 'string' && derived.speed ? { speed: derived.speed } : {}),
  };
}

function buildActionContract(action: ArtgenPathAction): BuiltContract {
  const spec = ACTIONS[action];
  const path = action === 'imagine' ? ARTGEN_BASE_PATH : `${ARTGEN_BASE_PATH}/${action}`;
  const rules = [...(spec.rules ?? [])];
  if ('prompt' in spec.properties && spec.properties.prompt!.type !== 'forbidden') rules.push(FLAGS_RULE);
  if ('size' in spec.properties) rules.push(SIZE_RULE);
  if (isArtgenFollowUp(action)) rules.push(PARENT_RULE);
  return defineContract({
    model: 'artgen',
    family: 'artgen',
    operation: action === 'video' ? 'video_generation' : 'image_generation',
    endpoint: path,
    schemaVersion: SCHEMA_VERSION,
    ack: 'artgen',
    pool: 'artgen',
    pollIntervalMs: action === 'describe' ? { min: 500, max: 1000 } : POLL.image,
    estimatedSeconds: spec.estimatedSeconds,
    // spec 4.9: structured fields and metadata beyond the listed ones are accepted, as on every other family: passed
    // upstream untouched, bounded by the route's body cap (256 KiB) and the edge's nesting limit
    body: { properties: spec.properties, required: spec.required, additionalProperties: true },
    serverRules: rules,
    normalize(body) {
      const flags = typeof body.prompt === 'string' ? (parseArtgenFlags(body.prompt) as { flags: ArtgenFlags }).flags : {};
      const speed = canonicalSpeed(action, (body.speed as string | undefined) ?? flags.speed);
      const origin = isArtgenFollowUp(action) ? undefined : originFacts(body, flags);
      const billingAction = action === 'video' && body.resolution === '720p' ? 'video-720p' : action;
      const derived: Record<string, unknown> = {
        action,
        ...(origin ?? {}),
        ...(speed ? { speed } : {}),
        ...(flags.aspect || typeof body.size === 'string' ? { aspect: flags.aspect ?? body.size } : {}),
        ...(typeof body.index === 'number' ? { index: body.index } : {}),
        ...(typeof body.direction === 'string' ? { direction: body.direction } : {}),
        ...(typeof body.zoom_ratio === 'number' ? { zoomRatio: body.zoom_ratio } : {}),
        ...(typeof body.batch_size === 'number' ? { batchSize: body.batch_size } : {}),
        ...(typeof body.task_id === 'string' ? { parentTaskId: body.task_id } : {}),
      };
      return {
        derived,
        billing: [artgenBillingItem({ action: billingAction, version: origin?.version, speed, batchSize: body.batch_size as number | undefined })],
        expected: outputOf(action, body),
        upstreamBody: canonicalUpstreamBody(body, derived),
        upstreamPath: path === ARTGEN_BASE_PATH ? `${ARTGEN_BASE_PATH}/imagine` : path,
      };
    },
  });
}

/** One contract per action (spec 4.9): the registry's art suite entry. */
export const ARTGEN_CONTRACTS: Readonly<Record<ArtgenPathAction, BuiltContract>> = Object.freeze(
  Object.fromEntries(ARTGEN_PATH_ACTIONS.map((a) => [a, buildActionContract(a)])) as Record<ArtgenPathAction, BuiltContract>,
);
