import {
  ARTGEN_DEFAULT_VERSION,
  ARTGEN_PAN_DIRECTIONS,
  artgenVersionName,
  parseArtgenFlags,
  type ArtgenFlags,
  type ArtgenPanDirection,
  type ArtgenPathAction,
} from '@gmg/contracts';
import { parseMarkers, type SimMarkers } from '../sim-scenario';
import { baseTile, blendRatio, panned, requestRatio, tileLike, upscaled, zoomed, type Size } from './artgen-geometry';
import { describePrompts } from './artgen-describe';
import type { ArtOutput, ArtTask } from './artgen-task';

/** A refusal in the art error shape. */
export interface ArtRefusal {
  status: 400 | 404;
  type: 'invalid_request_error' | 'not_found';
  message: string;
}

/** Everything a new task needs besides its id and clock. */
export interface ArtPlan {
  action: ArtgenPathAction;
  prompt: string;
  markers: SimMarkers;
  output: ArtOutput;
  /** Seed of a single image when it is a parent's tile shown larger (upscale); otherwise the task's own. */
  seed?: string;
  /** Base duration kind and estimate for sim-scenario durationMs. */
  timing: { kind: 'images' | 'videos'; estimatedSeconds: number };
  /** Inpaint: waits in MODAL until `/modal`. */
  awaitsModal?: boolean;
  version?: string;
  parentId?: string;
}

export type PlanResult = { ok: true; plan: ArtPlan } | { ok: false; refusal: ArtRefusal };

/** A parent as the planner sees it: the task and its status now. */
export interface ParentRef {
  task: ArtTask;
  status: string;
}

const bad = (message: string): PlanResult => ({ ok: false, refusal: { status: 400, type: 'invalid_request_error', message } });

/**
 * The normalized version (v7, v8.2, altstyle6 …) a task runs on: its own `version` / `--v` / `--niji N`, else its
 * parent's, else the suite default; `alt_style` or `--niji` select the alternate style.
 */
function versionOf(b: Record<string, unknown>, flags: ArtgenFlags, parent?: ArtTask): string | undefined {
  const own = b.version ?? flags.version ?? flags.altStyleVersion;
  const altStyle = b.alt_style === true || (b.alt_style === undefined && flags.altStyle === true);
  if (own === undefined && !altStyle && parent) return parent.version;
  const raw = own ?? parent?.version ?? ARTGEN_DEFAULT_VERSION;
  // a version is a string or a number (`7`, `8.2`); anything else names none
  return typeof raw === 'string' || typeof raw === 'number' ? artgenVersionName(String(raw), altStyle) : undefined;
}

function imageUrls(b: Record<string, unknown>, min: number, max: number): string[] | string {
  const v = b.image_urls;
  if (!Array.isArray(v) || v.length < min || v.length > max || !v.every((u) => typeof u === 'string' && u.length > 0)) {
    return `\`image_urls\` must hold ${min} to ${max} URLs`;
  }
  return v as string[];
}

/** The image a follow-up works on: a grid's tiles all share one size. */
function parentImage(p: ArtTask): Size | undefined {
  if (p.output.kind === 'grid') return p.output.tile;
  if (p.output.kind === 'single') return p.output.size;
  return undefined;
}

const imageCount = (p: ArtTask): number => (p.output.kind === 'grid' ? 4 : 1);

function tileIndex(b: Record<string, unknown>, parent: ArtTask): number | string {
  const index = b.index ?? 1;
  const n = imageCount(parent);
  if (!Number.isInteger(index) || (index as number) < 1 || (index as number) > n) {
    return `\`index\` must be an integer from 1 to ${n} (the parent has ${n} image${n > 1 ? 's' : ''})`;
  }
  return index as number;
}

/** Plans a new task from a submit body. `parent` is the resolved `task_id` for follow-ups (the router 404s). */
export function planTask(action: ArtgenPathAction, b: Record<string, unknown>, parent?: ParentRef): PlanResult {
  const ownPrompt = typeof b.prompt === 'string' ? b.prompt : undefined;
  const flags = ownPrompt === undefined ? { ok: true as const, flags: {} } : parseArtgenFlags(ownPrompt);
  if (!flags.ok) return bad(flags.message);
  const base = {
    action,
    prompt: ownPrompt ?? parent?.task.prompt ?? '',
    // A follow-up without its own prompt inherits its parent's markers.
    markers: ownPrompt !== undefined || !parent ? parseMarkers(ownPrompt) : parent.task.markers,
    version: versionOf(b, flags.flags, parent?.task),
    ...(parent ? { parentId: parent.task.id } : {}),
  };
  const grid = (tile: Size, estimatedSeconds = 60): PlanResult => ({
    ok: true,
    plan: { ...base, output: { kind: 'grid', tile }, timing: { kind: 'images', estimatedSeconds } },
  });

  switch (action) {
    case 'imagine':
    case 'edits':
      if (action === 'imagine' && !ownPrompt?.trim()) return bad('`prompt` is required');
      return grid(baseTile(requestRatio(flags.flags.aspect, b.size)));
    case 'blend': {
      const urls = imageUrls(b, 2, 4);
      if (typeof urls === 'string') return bad(urls);
      const ratio = blendRatio(b.dimensions);
      if (ratio === undefined) return bad('`dimensions` must be one of PORTRAIT, SQUARE, LANDSCAPE');
      return grid(baseTile(ratio));
    }
    case 'describe': {
      const urls = imageUrls(b, 1, 4);
      if (typeof urls === 'string') return bad(urls);
      return { ok: true, plan: { ...base, output: { kind: 'text', prompts: describePrompts(urls) }, timing: { kind: 'images', estimatedSeconds: 0 } } };
    }
    case 'video': {
      const urls = imageUrls(b, 1, 4);
      if (typeof urls === 'string') return bad(urls);
      const count = b.batch_size ?? 1;
      if (!Number.isInteger(count) || (count as number) < 1 || (count as number) > 4) return bad('`batch_size` must be an integer from 1 to 4');
      if (b.motion !== undefined && b.motion !== 'low' && b.motion !== 'high') return bad('`motion` must be low or high');
      return {
        ok: true,
        plan: { ...base, output: { kind: 'videos', count: count as number, still: baseTile(16 / 9) }, timing: { kind: 'videos', estimatedSeconds: 0 } },
      };
    }
    default:
      return planFollowUp(action, b, parent, base, grid);
  }
}

function planFollowUp(
  action: ArtgenPathAction,
  b: Record<string, unknown>,
  parent: ParentRef | undefined,
  base: Omit<ArtPlan, 'output' | 'timing'>,
  grid: (tile: Size) => PlanResult,
): PlanResult {
  if (!parent) return bad('`task_id` is required');
  const p = parent.task;
  if (parent.status !== 'SUCCESS') return bad(`task ${p.id} is ${parent.status}; ${action} needs a finished (SUCCESS) task`);
  const img = parentImage(p);
  if (!img) return bad(`task ${p.id} has no image to ${action}`);
  switch (action) {
    case 'upscale': {
      const index = tileIndex(b, p);
      if (typeof index === 'string') return bad(index);
      const seed = p.output.kind === 'grid' ? `${p.seed}.${index}` : p.seed;
      return { ok: true, plan: { ...base, seed, output: { kind: 'single', size: upscaled(img) }, timing: { kind: 'images', estimatedSeconds: 0 } } };
    }
    case 'pan': {
      if (!(ARTGEN_PAN_DIRECTIONS as readonly unknown[]).includes(b.direction)) return bad('`direction` must be one of left, right, up, down');
      const size = panned(img, b.direction as ArtgenPanDirection);
      return { ok: true, plan: { ...base, output: { kind: 'single', size }, timing: { kind: 'images', estimatedSeconds: 0 } } };
    }
    case 'zoom': {
      const r = b.zoom_ratio ?? 2;
      if (typeof r !== 'number' || !(r > 1 && r <= 2)) return bad('`zoom_ratio` must be a number above 1 and at most 2');
      return grid(zoomed(img, r));
    }
    case 'inpaint': {
      const r = grid(tileLike(img));
      return r.ok ? { ok: true, plan: { ...r.plan, awaitsModal: true } } : r;
    }
    case 'reroll':
      return grid(p.output.kind === 'grid' ? p.output.tile : tileLike(img));
    default: {
      // variation, high-variation, low-variation, remix-strong, remix-subtle
      const index = tileIndex(b, p);
      if (typeof index === 'string') return bad(index);
      return grid(p.output.kind === 'grid' ? p.output.tile : tileLike(img));
    }
  }
}
