import { createHash } from 'node:crypto';
import {
  artgenButtons,
  artgenNativeAction,
  isArtgenPanVersion,
  isArtgenPathAction,
  type ArtgenNativeStatus,
  type ArtgenNativeTask,
  type ArtgenParentFacts,
} from '@gmg/contracts';
import type { TaskRecord } from '@gmg/db';

/**
 * The job hash our buttons carry: derived from the task id (so it needs no storage), 32 hex characters like the art
 * suite's own hashes. Not a secret: an unkeyed hash of a public id that anyone holding the id can compute; `/action`
 * checks it against the task, and the task against the caller's account (the parent must be its own).
 */
export const artgenJobHash = (taskId: string): string => createHash('sha256').update(`artgen:${taskId}`).digest('hex').slice(0, 32);

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** Our native status: from the unified status, MODAL from the upstream's native state while the task is open. */
export function artgenStatusOf(t: TaskRecord): ArtgenNativeStatus {
  switch (t.status) {
    case 'pending':
      return 'SUBMITTED';
    case 'processing':
      return t.native?.status === 'MODAL' ? 'MODAL' : 'IN_PROGRESS';
    case 'completed':
      return 'SUCCESS';
    default:
      return 'FAILURE';
  }
}

/** What a follow-up checks about this task as its parent. */
export function artgenParentFacts(t: TaskRecord): ArtgenParentFacts {
  return {
    action: t.model === 'artgen' ? str(t.request.derived?.action) : undefined,
    version: str(t.request.derived?.version),
    status: t.status,
    nativeStatus: str(t.native?.status),
    imageCount: t.result?.images?.length ?? 0,
  };
}

/** Builds the native view from the task row and the upstream's native state stored with it. */
export function toArtgenNativeTask(t: TaskRecord): ArtgenNativeTask {
  const derived = t.request.derived ?? {};
  const action = isArtgenPathAction(derived.action) ? derived.action : 'imagine';
  const status = artgenStatusOf(t);
  const n = t.native ?? {};
  const description = str(n.description) ?? (action === 'describe' ? t.result?.text : undefined);
  const view: ArtgenNativeTask = {
    id: t.id,
    action: artgenNativeAction(action),
    status,
    progress: `${status === 'SUCCESS' ? 100 : t.progress}%`,
    // describe answers with its text in `prompt` too (spec 2.3)
    prompt: (action === 'describe' ? description : undefined) ?? str(t.request.upstreamBody.prompt) ?? str(n.prompt) ?? '',
    image_urls: status === 'SUCCESS' ? (t.result?.images ?? []).map((i) => i.url) : [],
    buttons: status === 'SUCCESS' ? artgenButtons(action, artgenJobHash(t.id), { panCapable: isArtgenPanVersion(str(derived.version)) }) : [],
    submit_time: t.createdAt.getTime(),
  };
  if (description !== undefined) view.description = description;
  if (status === 'FAILURE') view.fail_reason = t.error?.message ?? 'Generation failed';
  if (status === 'SUCCESS') {
    const grid = str(n.grid_image_url);
    if (grid) view.grid_image_url = grid;
    const videos = t.result?.videos?.map((v) => v.url[0]!).filter(Boolean);
    if (videos?.length) view.video_urls = videos;
    if (typeof n.width === 'number') view.width = n.width;
    if (typeof n.height === 'number') view.height = n.height;
  }
  if (t.startedAt) view.start_time = t.startedAt.getTime();
  if (t.completedAt) view.finish_time = t.completedAt.getTime();
  return view;
}
