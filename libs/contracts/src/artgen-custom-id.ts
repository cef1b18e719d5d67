/**
 * The art suite's follow-up vocabulary, shared by the gateway (buttons it shows, `/action` it accepts) and the
 * upstream simulator (ARTGEN-PROTOCOL.md §6). A customId is `::`-separated: family, action, index, job hash and,
 * for single-job buttons, `SOLO`. The hash ties a button to the task that showed it.
 */

/** Path segments under `/v1/artgen/generations/` (the bare path is imagine). */
export const ARTGEN_PATH_ACTIONS = [
  'imagine',
  'blend',
  'describe',
  'edits',
  'upscale',
  'variation',
  'high-variation',
  'low-variation',
  'reroll',
  'zoom',
  'pan',
  'inpaint',
  'modal',
  'video',
  'remix-strong',
  'remix-subtle',
] as const;
export type ArtgenPathAction = (typeof ARTGEN_PATH_ACTIONS)[number];

export function isArtgenPathAction(value: unknown): value is ArtgenPathAction {
  return typeof value === 'string' && (ARTGEN_PATH_ACTIONS as readonly string[]).includes(value);
}

/** `high-variation` → `HIGH_VARIATION`: the `action` of the native view and of the submit answer. */
export function artgenNativeAction(action: ArtgenPathAction): string {
  return action.replace(/-/g, '_').toUpperCase();
}

export const ARTGEN_PAN_DIRECTIONS = ['left', 'right', 'up', 'down'] as const;
export type ArtgenPanDirection = (typeof ARTGEN_PAN_DIRECTIONS)[number];


/** Versions on which pan is offered and accepted (spec 4.9). */
export const ARTGEN_PAN_VERSIONS = ['v6', 'v6.1', 'v7', 'v8.1', 'v8.2', 'altstyle6'] as const;

/** Actions whose result is a 2×2 grid of four tiles; upscale and pan give one image; describe/video/inpaint none. */
export const ARTGEN_GRID_ACTIONS: readonly ArtgenPathAction[] = [
  'imagine',
  'blend',
  'edits',
  'variation',
  'high-variation',
  'low-variation',
  'reroll',
  'zoom',
  'remix-strong',
  'remix-subtle',
  'modal',
  'inpaint',
];
export const ARTGEN_SINGLE_IMAGE_ACTIONS: readonly ArtgenPathAction[] = ['upscale', 'pan'];

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

const HASH = /^[A-Za-z0-9_-]{1,64}$/;
const TILE = /^[1-4]$/;
const OUTPAINT_PERCENT: Record<string, number> = { '50': 2, '75': 1.5 };
const JOB_SOLO: Record<string, ArtgenPathAction> = {
  high_variation: 'high-variation',
  low_variation: 'low-variation',
  remix_strong: 'remix-strong',
  remix_subtle: 'remix-subtle' };

function assertHash(hash: string): void {
  if (!HASH.test(hash)) throw new Error(`art suite job hash must match ${HASH}: ${hash}`);
}

/** Builds the customId for an action; the inverse of parseArtgenCustomId. */
export function buildArtgenCustomId(spec: ArtgenCustomIdAction): string {
  const { action, hash } = spec;
  assertHash(hash);
  const index = spec.index ?? 1;
  switch (action) {
    case 'upscale':
      return `MJ::JOB::upsample::${index}::${hash}`;
    case 'variation':
      return `MJ::JOB::variation::${index}::${hash}`;
    case 'reroll':
      return `MJ::JOB::reroll::0::${hash}::SOLO`;
    case 'high-variation':
    case 'low-variation':
      return `MJ::JOB::${action.replace('-', '_')}::1::${hash}::SOLO`;
    case 'remix-strong':
    case 'remix-subtle':
      return `MJ::JOB::${action.replace('-', '_')}::${index}::${hash}::SOLO`;
    case 'inpaint':
      return `MJ::Inpaint::1::${hash}::SOLO`;
    case 'zoom': {
      const ratio = spec.zoom_ratio ?? 2;
      const percent = Object.keys(OUTPAINT_PERCENT).find((p) => OUTPAINT_PERCENT[p] === ratio);
      if (!percent) throw new Error(`no zoom button for ratio ${ratio}`);
      return `MJ::Outpaint::${percent}::1::${hash}::SOLO`;
 }
    case 'pan':
      if (!spec.direction) throw new Error('pan customId needs a direction');
      return `MJ::JOB::pan_${spec.direction}::1::${hash}::SOLO`;
    default:
      throw new Error(`no customId for action ${action}`);
 }
}

/** Parses a customId into its action and implied fields; undefined when it is not one this grammar builds. */
export function parseArtgenCustomId(customId: unknown): ArtgenCustomIdAction | undefined {
  if (typeof customId !== 'string' || customId.length > 200) return undefined;
  const parts = customId.split('::');
  if (parts[0] !== 'MJ') return undefined;
  const solo = parts[parts.length - 1] === 'SOLO';
  const core = solo ? parts.slice(1, -1) : parts.slice(1);
  const parsed = parseCore(core, solo);
  return parsed && HASH.test(parsed.hash) ? parsed : undefined;
}

function parseCore(core: string[], solo: boolean): ArtgenCustomIdAction | undefined {
  const [family, a, b, c, d] = core;
  if (family === 'Inpaint' && solo && core.length === 3 && a === '1') return { action: 'inpaint', hash: b };
  if (family === 'Outpaint' && solo && core.length === 4 && b === '1' && OUTPAINT_PERCENT[a] !== undefined) {
    return { action: 'zoom', hash: c, zoom_ratio: OUTPAINT_PERCENT[a] };
 }
  if (family !== 'JOB' || core.length !== 4 || d !== undefined) return undefined;
  if (!solo && (a === 'upsample' || a === 'variation') && TILE.test(b)) {
    return { action: a === 'upsample' ? 'upscale' : 'variation', hash: c, index: Number(b) };
 }
  if (!solo) return undefined;
  if (a === 'reroll' && b === '0') return { action: 'reroll', hash: c };
  const pan = /^pan_(left|right|up|down)$/.exec(a);
  if (pan && b === '1') return { action: 'pan', hash: c, direction: pan[1] as ArtgenPanDirection };
  const job = JOB_SOLO[a];
  if (!job) return undefined;
  if (job === 'remix-strong' || job === 'remix-subtle') {
    return TILE.test(b) ? { action: job, hash: c, index: Number(b) } : undefined;
 }
  return b === '1' ? { action: job, hash: c, index: 1 } : undefined;
}

/** Pan-capable versions (spec 4.9); `version` is a normalized name (v8.2, v6, altstyle6…). */
export function isArtgenPanVersion(version: string | undefined): boolean {
  return version !== undefined && (ARTGEN_PAN_VERSIONS as readonly string[]).includes(version);
}

const PAN_LABELS: Record<ArtgenPanDirection, string> = { left: '⬅️', right: '➡️', up: '⬆️', down: '⬇️' };

/**
 * Buttons a finished task shows. Grid: U1–U4, 🔄, V1–V4. Single image (upscale, pan): Vary (Strong) / (Subtle) /
 * (Region), Zoom Out 2x / 1.5x, and the four pan arrows only when `panCapable`. Anything else: none.
 */
export function artgenButtons(action: ArtgenPathAction, hash: string, opts: { panCapable?: boolean } = {}): ArtgenButton[] {
  const b = (label: string, spec: Omit<ArtgenCustomIdAction, 'hash'>): ArtgenButton => ({
    label,
    customId: buildArtgenCustomId({ ...spec, hash }) });
  if (ARTGEN_SINGLE_IMAGE_ACTIONS.includes(action)) {
    const out = [
      b('Vary (Strong)', { action: 'high-variation' }),
      b('Vary (Subtle)', { action: 'low-variation' }),
      b('Vary (Region)', { action: 'inpaint' }),
      b('Zoom Out 2x', { action: 'zoom', zoom_ratio: 2 }),
      b('Zoom Out 1.5x', { action: 'zoom', zoom_ratio: 1.5 }),
    ];
    if (opts.panCapable) {
      for (const direction of ARTGEN_PAN_DIRECTIONS) out.push(b(PAN_LABELS[direction], { action: 'pan', direction }));
 }
    return out;
 }
  if (!ARTGEN_GRID_ACTIONS.includes(action)) return [];
  const tiles = [1, 2, 3, 4];
  return [
    ...tiles.map((index) => b(`U${index}`, { action: 'upscale', index })),
    b('🔄', { action: 'reroll' }),
    ...tiles.map((index) => b(`V${index}`, { action: 'variation', index })),
  ];
}
