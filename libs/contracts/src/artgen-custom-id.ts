/**
 * The art suite's action vocabulary, shared by the gateway (routes, contracts, price keys, buttons it shows,
 * `/action` it accepts) and the upstream simulator (ARTGEN-PROTOCOL.md §6). ARTGEN_ACTION_TABLE is its one
 * source: every spelling of an action and both directions of a customId derive from its row.
 *
 * A customId is `::`-separated: `MJ`, family, action token, index, job hash and, for single-job buttons, `SOLO`.
 * The hash ties a button to the task that showed it.
 */

export const ARTGEN_PAN_DIRECTIONS = ['left', 'right', 'up', 'down'] as const;
export type ArtgenPanDirection = (typeof ARTGEN_PAN_DIRECTIONS)[number];

/** What a finished task of the action holds: a 2×2 grid of four tiles, one image, a text or videos. */
type ArtgenResult = 'grid' | 'single' | 'text' | 'video';

/** Which parent a follow-up continues (see artgen-parent.ts); an action without one starts from nothing. */
export type ArtgenParentKind = 'grid' | 'image' | 'single' | 'imagine' | 'modal';

interface ArtgenActionRow {
  /** Its spelling in price keys (`artgen@high_variation`). */
  readonly billing: string;
  /** Its spelling in the native view and the submit answer (`HIGH_VARIATION`). */
  readonly native: string;
  readonly result: ArtgenResult;
  readonly parent?: ArtgenParentKind;
  /**
   * The customId of its button, both directions: `::`-separated segments, each literal or a literal prefix and one
   * slot — `{index}` a tile 1–4, `{index=1}` the index, always 1, `{zoom_ratio}` the outpaint percent (50 → 2,
   * 75 → 1.5), `{direction}` a pan direction, `{hash}` the job hash. No template: the action has no button.
   */
  readonly customId?: string;
  /** The button's label, with the same slots. */
  readonly label?: string;
}

/** The art suite's actions, by API name (the path segment under `/v1/artgen/generations/`; the bare path is imagine). */
export const ARTGEN_ACTION_TABLE = {
  imagine: { billing: 'imagine', native: 'IMAGINE', result: 'grid' },
  blend: { billing: 'blend', native: 'BLEND', result: 'grid' },
  describe: { billing: 'describe', native: 'DESCRIBE', result: 'text' },
  edits: { billing: 'edits', native: 'EDITS', result: 'grid' },
  upscale: { billing: 'upscale', native: 'UPSCALE', result: 'single', parent: 'grid', customId: 'MJ::JOB::upsample::{index}::{hash}', label: 'U{index}' },
  variation: { billing: 'variation', native: 'VARIATION', result: 'grid', parent: 'grid', customId: 'MJ::JOB::variation::{index}::{hash}', label: 'V{index}' },
  'high-variation': {
    billing: 'high_variation',
    native: 'HIGH_VARIATION',
    result: 'grid',
    parent: 'image',
    customId: 'MJ::JOB::high_variation::{index=1}::{hash}::SOLO',
    label: 'Vary (Strong)',
  },
  'low-variation': {
    billing: 'low_variation',
    native: 'LOW_VARIATION',
    result: 'grid',
    parent: 'image',
    customId: 'MJ::JOB::low_variation::{index=1}::{hash}::SOLO',
    label: 'Vary (Subtle)',
  },
  reroll: { billing: 'reroll', native: 'REROLL', result: 'grid', parent: 'grid', customId: 'MJ::JOB::reroll::0::{hash}::SOLO', label: '🔄' },
  zoom: {
    billing: 'zoom',
    native: 'ZOOM',
    result: 'grid',
    parent: 'image',
    customId: 'MJ::Outpaint::{zoom_ratio}::1::{hash}::SOLO',
    label: 'Zoom Out {zoom_ratio}x',
  },
  pan: { billing: 'pan', native: 'PAN', result: 'single', parent: 'single', customId: 'MJ::JOB::pan_{direction}::1::{hash}::SOLO', label: '{direction}' },
  // a grid once its modal step is done
  inpaint: { billing: 'inpaint', native: 'INPAINT', result: 'grid', parent: 'image', customId: 'MJ::Inpaint::1::{hash}::SOLO', label: 'Vary (Region)' },
  modal: { billing: 'modal', native: 'MODAL', result: 'grid', parent: 'modal' },
  video: { billing: 'video', native: 'VIDEO', result: 'video' },
  'remix-strong': {
    billing: 'remix_strong',
    native: 'REMIX_STRONG',
    result: 'grid',
    parent: 'imagine',
    customId: 'MJ::JOB::remix_strong::{index}::{hash}::SOLO',
  },
  'remix-subtle': {
    billing: 'remix_subtle',
    native: 'REMIX_SUBTLE',
    result: 'grid',
    parent: 'imagine',
    customId: 'MJ::JOB::remix_subtle::{index}::{hash}::SOLO',
  },
} as const satisfies Record<string, ArtgenActionRow>;

export type ArtgenPathAction = keyof typeof ARTGEN_ACTION_TABLE;
const rowOf = (action: ArtgenPathAction): ArtgenActionRow => ARTGEN_ACTION_TABLE[action];

/** Path segments under `/v1/artgen/generations/`, in the table's order. */
export const ARTGEN_PATH_ACTIONS = Object.keys(ARTGEN_ACTION_TABLE) as readonly ArtgenPathAction[];

export function isArtgenPathAction(value: unknown): value is ArtgenPathAction {
  return typeof value === 'string' && Object.hasOwn(ARTGEN_ACTION_TABLE, value);
}

/** `high-variation` → `HIGH_VARIATION`: the `action` of the native view and of the submit answer. */
export const artgenNativeAction = (action: ArtgenPathAction): string => rowOf(action).native;

/** What a finished task of the action holds. */
export const artgenResultOf = (action: ArtgenPathAction): ArtgenResult => rowOf(action).result;

/** The parent a follow-up continues; undefined for an action that starts from nothing. */
export const artgenParentKindOf = (action: ArtgenPathAction): ArtgenParentKind | undefined => rowOf(action).parent;

/** An action that continues a parent task by `task_id` (every one but imagine, blend, describe, edits and video). */
export const isArtgenFollowUp = (action: ArtgenPathAction): boolean => rowOf(action).parent !== undefined;

/** Versions on which pan is offered and accepted (spec 4.9). */
export const ARTGEN_PAN_VERSIONS = ['v6', 'v6.1', 'v7', 'v8.1', 'v8.2', 'altstyle6'] as const;

/** Actions whose result is a 2×2 grid of four tiles; upscale and pan give one image; describe/video none. */
export const ARTGEN_GRID_ACTIONS: readonly ArtgenPathAction[] = ARTGEN_PATH_ACTIONS.filter((a) => rowOf(a).result === 'grid');
export const ARTGEN_SINGLE_IMAGE_ACTIONS: readonly ArtgenPathAction[] = ARTGEN_PATH_ACTIONS.filter((a) => rowOf(a).result === 'single');

export interface ArtgenButton {
  customId: string;
  label: string;
}

/** What a customId asks for: the path action and the body fields it implies. */
export interface ArtgenCustomIdAction {
  action: ArtgenPathAction;
  hash: string;
  index?: number;
  direction?: ArtgenPanDirection;
  zoom_ratio?: number;
}

type Fields = Omit<ArtgenCustomIdAction, 'action'>;

const HASH = /^[A-Za-z0-9_-]{1,64}$/;
const TILE = /^[1-4]$/;
const OUTPAINT_PERCENT = new Map([
  ['50', 2],
  ['75', 1.5],
]);
const PAN_LABELS: Record<ArtgenPanDirection, string> = { left: '⬅️', right: '➡️', up: '⬆️', down: '⬇️' };

/** One slot of a template: what it writes for a spec (throws when the spec has no such button) and what it reads. */
interface Slot {
  build(spec: Fields): string;
  parse(text: string): Partial<Fields> | undefined;
  label(spec: Fields): string;
}

const SLOTS: Readonly<Record<string, Slot>> = {
  index: {
    build: (s) => String(s.index ?? 1),
    parse: (t) => (TILE.test(t) ? { index: Number(t) } : undefined),
    label: (s) => String(s.index ?? 1),
  },
  'index=1': { build: () => '1', parse: (t) => (t === '1' ? { index: 1 } : undefined), label: () => '1' },
  zoom_ratio: {
    build: (s) => {
      const ratio = s.zoom_ratio ?? 2;
      const percent = [...OUTPAINT_PERCENT].find(([, r]) => r === ratio)?.[0];
      if (!percent) throw new Error(`no zoom button for ratio ${ratio}`);
      return percent;
    },
    parse: (t) => (OUTPAINT_PERCENT.has(t) ? { zoom_ratio: OUTPAINT_PERCENT.get(t) } : undefined),
    label: (s) => String(s.zoom_ratio ?? 2),
  },
  direction: {
    build: (s) => {
      if (!s.direction) throw new Error('pan customId needs a direction');
      return s.direction;
    },
    parse: (t) => ((ARTGEN_PAN_DIRECTIONS as readonly string[]).includes(t) ? { direction: t as ArtgenPanDirection } : undefined),
    label: (s) => (s.direction ? PAN_LABELS[s.direction] : ''),
  },
  // `SOLO` is the marker of the last segment: a hash that reads so would make the id ambiguous
  hash: { build: (s) => s.hash, parse: (t) => (HASH.test(t) && t !== 'SOLO' ? { hash: t } : undefined), label: (s) => s.hash },
};

interface Segment {
  prefix: string;
  slot?: Slot;
}

/** `pan_{direction}` → prefix `pan_`, slot direction; `upsample` → the literal. */
function compile(template: string): Segment[] {
  return template.split('::').map((seg) => {
    const m = /^(.*)\{([a-z_=0-9]+)\}$/.exec(seg);
    if (!m) return { prefix: seg };
    const slot = SLOTS[m[2]!];
    if (!slot) throw new Error(`unknown customId slot ${m[2]} in ${template}`);
    return { prefix: m[1]!, slot };
  });
}

/** A label with its slots filled (`Zoom Out {zoom_ratio}x` → `Zoom Out 1.5x`). */
const labelText = (label: string, spec: Fields): string => label.replace(/\{([a-z_=0-9]+)\}/g, (_, slot: string) => SLOTS[slot]!.label(spec));

/** Templates by action, compiled once. */
const CUSTOM_IDS: ReadonlyMap<ArtgenPathAction, readonly Segment[]> = new Map(
  ARTGEN_PATH_ACTIONS.flatMap((a) => {
    const t = rowOf(a).customId;
    return t ? [[a, compile(t)] as const] : [];
  }),
);

function assertHash(hash: string): void {
  if (!HASH.test(hash) || hash === 'SOLO') throw new Error(`art suite job hash must match ${HASH} (and not be SOLO): ${hash}`);
}

/** Builds the customId for an action; the inverse of parseArtgenCustomId. */
export function buildArtgenCustomId(spec: ArtgenCustomIdAction): string {
  assertHash(spec.hash);
  const segments = CUSTOM_IDS.get(spec.action);
  if (!segments) throw new Error(`no customId for action ${spec.action}`);
  return segments.map((s) => s.prefix + (s.slot ? s.slot.build(spec) : '')).join('::');
}

/** Parses a customId into its action and implied fields; undefined when it is not one this grammar builds. */
export function parseArtgenCustomId(customId: unknown): ArtgenCustomIdAction | undefined {
  if (typeof customId !== 'string' || customId.length > 200) return undefined;
  const parts = customId.split('::');
  for (const [action, segments] of CUSTOM_IDS) {
    const fields = matchSegments(segments, parts);
    if (fields?.hash !== undefined) return { action, ...fields } as ArtgenCustomIdAction;
  }
  return undefined;
}

function matchSegments(segments: readonly Segment[], parts: readonly string[]): Partial<Fields> | undefined {
  if (parts.length !== segments.length) return undefined;
  let fields: Partial<Fields> = {};
  for (const [i, seg] of segments.entries()) {
    const part = parts[i]!;
    if (!seg.slot) {
      if (part !== seg.prefix) return undefined;
      continue;
    }
    if (!part.startsWith(seg.prefix)) return undefined;
    const read = seg.slot.parse(part.slice(seg.prefix.length));
    if (!read) return undefined;
    fields = { ...fields, ...read };
  }
  return fields;
}

/** Pan-capable versions (spec 4.9); `version` is a normalized name (v8.2, v6, altstyle6…). */
export function isArtgenPanVersion(version: string | undefined): boolean {
  return version !== undefined && (ARTGEN_PAN_VERSIONS as readonly string[]).includes(version);
}

type ButtonSpec = Omit<ArtgenCustomIdAction, 'hash'>;
const TILES = [1, 2, 3, 4];
const GRID_BUTTONS: readonly ButtonSpec[] = [
  ...TILES.map((index) => ({ action: 'upscale', index }) as const),
  { action: 'reroll' },
  ...TILES.map((index) => ({ action: 'variation', index }) as const),
];
const SINGLE_IMAGE_BUTTONS: readonly ButtonSpec[] = [
  { action: 'high-variation' },
  { action: 'low-variation' },
  { action: 'inpaint' },
  { action: 'zoom', zoom_ratio: 2 },
  { action: 'zoom', zoom_ratio: 1.5 },
];
const PAN_BUTTONS: readonly ButtonSpec[] = ARTGEN_PAN_DIRECTIONS.map((direction) => ({ action: 'pan', direction }));

function button(spec: ButtonSpec, hash: string): ArtgenButton {
  const label = rowOf(spec.action).label;
  if (label === undefined) throw new Error(`no button label for action ${spec.action}`);
  return { label: labelText(label, { ...spec, hash }), customId: buildArtgenCustomId({ ...spec, hash }) };
}

/**
 * Buttons a finished task shows. Grid: U1–U4, 🔄, V1–V4. Single image (upscale, pan): Vary (Strong) / (Subtle) /
 * (Region), Zoom Out 2x / 1.5x, and the four pan arrows only when `panCapable`. Anything else: none.
 */
export function artgenButtons(action: ArtgenPathAction, hash: string, opts: { panCapable?: boolean } = {}): ArtgenButton[] {
  const specs =
    rowOf(action).result === 'single'
      ? [...SINGLE_IMAGE_BUTTONS, ...(opts.panCapable ? PAN_BUTTONS : [])]
      : rowOf(action).result === 'grid'
        ? GRID_BUTTONS
        : [];
  return specs.map((s) => button(s, hash));
}
