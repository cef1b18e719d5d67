import { artgenBillingItem } from '../artgen-billing';
import {
  ARTGEN_GRID_ACTIONS,
  ARTGEN_SINGLE_IMAGE_ACTIONS,
  artgenParentKindOf,
  isArtgenPanVersion,
  isArtgenPathAction,
  type ArtgenParentKind,
  type ArtgenPathAction,
} from '../artgen-custom-id';
import type { TaskStatus } from '../task';
import type { ContractViolation, NormalizedRequest } from './types';

/** What a follow-up needs to know about its parent (read by the edge from the parent's task row). */
export interface ArtgenParentFacts {
  /** The parent's path action (its request's `derived.action`); undefined when the parent is not an art task. */
  action?: string;
  /** The parent's normalized version (v8.2, v6, altstyle6…). */
  version?: string;
  status: TaskStatus;
  /** The upstream's own state, e.g. `MODAL` (stored with the task). */
  nativeStatus?: string;
  /** Images of the parent's result (4 for a grid, 1 for an upscale or pan). */
  imageCount: number;
}

export type ArtgenParentOutcome = { ok: true; value: NormalizedRequest } | { ok: false; violation: ContractViolation };

/** Versions whose imagine tasks accept remix-strong / remix-subtle (spec 4.9). */
export const ARTGEN_REMIX_VERSIONS = ['v8.1', 'v8.2'] as const;

const refuse = (field: string, rule: string, message: string): ArtgenParentOutcome => ({
  ok: false,
  violation: { status: 400, type: 'invalid_request_error', field, rule: `server:${rule}`, message },
});

const isGrid = (a: ArtgenPathAction): boolean => ARTGEN_GRID_ACTIONS.includes(a);
const isSingle = (a: ArtgenPathAction): boolean => ARTGEN_SINGLE_IMAGE_ACTIONS.includes(a);

/** Which parents each kind of follow-up continues (ARTGEN_ACTION_TABLE `parent`), in words for the message and as a test. */
const PARENT_KINDS: Record<Exclude<ArtgenParentKind, 'modal'>, { accepts: (a: ArtgenPathAction) => boolean; words: string }> = {
  grid: { accepts: isGrid, words: 'a finished grid (imagine, blend, variation, reroll, zoom…)' },
  image: { accepts: (a) => isGrid(a) || isSingle(a), words: 'a finished image task' },
  single: { accepts: isSingle, words: 'a single upscaled image (an upscale or a pan)' },
  imagine: { accepts: (a) => a === 'imagine', words: 'a finished v8.1 / v8.2 imagine task' },
};

/**
 * Checks a follow-up against its parent (state, kind, version, tile index) and completes the request with what it
 * inherits: the parent's version, and the billing key chain for that version. Pure; the edge calls it before any
 * money moves, after the ownership check (a foreign parent never gets here: it answers like a missing one).
 */
export function applyArtgenParent(req: NormalizedRequest, parent: ArtgenParentFacts): ArtgenParentOutcome {
  const action = req.derived.action as ArtgenPathAction;
  const parentId = String(req.derived.parentTaskId);
  if (!isArtgenPathAction(parent.action)) return refuse('task_id', 'parent-kind', `\`task_id\`: task '${parentId}' is not an art suite task`);
  const parentAction = parent.action;
  const parentKind = artgenParentKindOf(action);
  if (parentKind === 'modal') {
    if (parentAction !== 'inpaint' || parent.status !== 'processing' || parent.nativeStatus !== 'MODAL') {
      return refuse('task_id', 'parent-state', `\`task_id\`: modal completes a task in MODAL (after /inpaint); task '${parentId}' is not in MODAL`);
    }
    return { ok: true, value: inherit(req, parent) };
  }
  const kind = parentKind ? PARENT_KINDS[parentKind] : undefined;
  if (!kind) return refuse('task_id', 'parent-kind', `\`task_id\`: ${action} does not continue a task`);
  if (parent.status !== 'completed') {
    return refuse('task_id', 'parent-state', `\`task_id\`: ${action} needs a finished parent; task '${parentId}' is ${parent.status}`);
  }
  if (!kind.accepts(parentAction)) {
    return refuse('task_id', 'parent-kind', `\`task_id\`: ${action} applies to ${kind.words}; task '${parentId}' is ${parentAction}`);
  }
  if (action === 'pan' && !isArtgenPanVersion(parent.version)) {
    return refuse(
      'task_id',
      'parent-version',
      `\`task_id\`: pan needs a parent of version v6, v6.1, v7, v8.1, v8.2 or altstyle6; task '${parentId}' is ${parent.version ?? 'unknown'}`,
    );
  }
  if ((action === 'remix-strong' || action === 'remix-subtle') && !(ARTGEN_REMIX_VERSIONS as readonly string[]).includes(parent.version ?? '')) {
    return refuse(
      'task_id',
      'parent-version',
      `\`task_id\`: ${action} needs a v8.1 or v8.2 imagine parent; task '${parentId}' is ${parent.version ?? 'unknown'}`,
    );
  }
  const index = req.derived.index;
  if (typeof index === 'number' && index > parent.imageCount) {
    return refuse('index', 'parent-index', `\`index\` must be at most ${parent.imageCount} (the images of task '${parentId}'); got ${index}`);
  }
  return { ok: true, value: inherit(req, parent) };
}

function inherit(req: NormalizedRequest, parent: ArtgenParentFacts): NormalizedRequest {
  const speed = req.derived.speed as string | undefined;
  const billing = [artgenBillingItem({ action: String(req.derived.action), version: parent.version, speed })];
  return { ...req, derived: { ...req.derived, version: parent.version, parentAction: parent.action }, billing };
}
