import { artgenButtons, artgenNativeAction, isArtgenPanVersion, type ArtgenButton, type TaskStatus, type UnifiedTask } from '@gmg/contracts';
import { PENDING_SHARE, SIM_MODERATION_MESSAGE, stateAt } from '../sim-scenario';
import { describeText } from './artgen-describe';
import { gridName, imageName, videoName } from './artgen-render';
import { seedOf, type ArtTask } from './artgen-task';

export type ArtStatus = 'SUBMITTED' | 'IN_PROGRESS' | 'SUCCESS' | 'FAILURE' | 'MODAL';

/** fail_reason of a `[sim:fail]` task (moderation uses the spec's `Banned prompt detected`). */
export const ART_FAIL_REASON = 'Generation failed';

export interface ArtState {
  status: ArtStatus;
  progress: number;
  startTime?: number;
  finishTime?: number;
  failReason?: string;
}

const FROM_SIM: Record<TaskStatus, ArtStatus> = { pending: 'SUBMITTED', processing: 'IN_PROGRESS', completed: 'SUCCESS', failed: 'FAILURE' };
const TO_UNIFIED: Record<ArtStatus, TaskStatus> = {
  SUBMITTED: 'pending',
  IN_PROGRESS: 'processing',
  MODAL: 'processing',
  SUCCESS: 'completed',
  FAILURE: 'failed',
};

const failReasonOf = (t: ArtTask) => (t.markers.outcome === 'moderation' ? SIM_MODERATION_MESSAGE : ART_FAIL_REASON);

/** The state of an art task at `now`: a pure function of its run and the clock (sim-scenario), no timers. */
export function artStateAt(t: ArtTask, now: number): ArtState {
  if (!t.run) return { status: 'MODAL', progress: 0 };
  const run = t.run;
  if (t.output.kind === 'text') {
    // Describe answered within its request: finished when anyone can see it.
    const failed = run.outcome === 'fail' || run.outcome === 'moderation';
    const end = run.startedAt + run.durationMs;
    return {
      status: failed ? 'FAILURE' : 'SUCCESS',
      progress: 100,
      startTime: run.startedAt,
      finishTime: end,
      ...(failed ? { failReason: failReasonOf(t) } : {}),
    };
  }
  const s = stateAt(run, now);
  // A task completed by /modal left MODAL already: it shows IN_PROGRESS, never SUBMITTED again.
  const status = s.status === 'pending' && t.action === 'inpaint' ? 'IN_PROGRESS' : FROM_SIM[s.status];
  const state: ArtState = { status, progress: s.progress };
  if (status !== 'SUBMITTED') state.startTime = run.startedAt + Math.round(run.durationMs * PENDING_SHARE);
  if (s.endedAt !== undefined) state.finishTime = Math.max(s.endedAt, state.startTime ?? s.endedAt);
  if (status === 'FAILURE') state.failReason = failReasonOf(t);
  return state;
}

interface ArtFiles {
  grid_image_url?: string;
  image_urls: string[];
  video_urls?: string[];
  width?: number;
  height?: number;
}

/** Result links of a finished task (the files render when first fetched). */
export function artFiles(t: ArtTask, publicUrl: string): ArtFiles {
  const url = (name: string) => `${publicUrl}/files/${name}`;
  const o = t.output;
  const tiles = [1, 2, 3, 4];
  switch (o.kind) {
    case 'grid':
      return {
        grid_image_url: url(gridName(t.seed, o.tile)),
        image_urls: tiles.map((i) => url(imageName(`${t.seed}.${i}`, o.tile))),
        width: o.tile.w,
        height: o.tile.h,
      };
    case 'single':
      return { image_urls: [url(imageName(t.seed, o.size))], width: o.size.w, height: o.size.h };
    case 'videos': {
      const items = tiles.slice(0, o.count);
      return { image_urls: items.map((i) => url(imageName(`${t.seed}.${i}`, o.still))), video_urls: items.map((i) => url(videoName(`${t.seed}.${i}`))) };
    }
    default:
      return { image_urls: [] };
  }
}

/** The sim's own buttons (hash = the task's seed); pan arrows only on pan-capable versions. */
export function artButtons(t: ArtTask): ArtgenButton[] {
  return artgenButtons(t.action, seedOf(t.id), { panCapable: isArtgenPanVersion(t.version) });
}

/** `GET /v1/artgen/<id>`: the native task of spec 2.3, unwrapped. */
export function nativeView(t: ArtTask, now: number, publicUrl: string): Record<string, unknown> {
  const s = artStateAt(t, now);
  const done = s.status === 'SUCCESS';
  const text = t.output.kind === 'text' ? describeText(t.output.prompts) : undefined;
  return {
    id: t.id,
    action: artgenNativeAction(t.action),
    status: s.status,
    progress: `${s.progress}%`,
    prompt: text ?? t.prompt,
    ...(t.output.kind === 'text' ? { description: text, prompts: t.output.prompts } : {}),
    ...(s.failReason ? { fail_reason: s.failReason } : {}),
    ...(done ? artFiles(t, publicUrl) : { image_urls: [] }),
    buttons: done ? artButtons(t) : [],
    submit_time: t.submitTime,
    ...(s.startTime !== undefined ? { start_time: s.startTime } : {}),
    ...(s.finishTime !== undefined ? { finish_time: s.finishTime } : {}),
  };
}

const DAY_S = 24 * 3600;

/** `GET /v1/tasks/<id>` for an art task: the unified task of spec 2.2 (`result.images` are the tiles). */
export function unifiedArtView(t: ArtTask, now: number, publicUrl: string): UnifiedTask {
  const s = artStateAt(t, now);
  const created = Math.floor(t.submitTime / 1000);
  const view: UnifiedTask = {
    id: t.id,
    object: 'generation.task',
    model: 'artgen',
    status: TO_UNIFIED[s.status],
    progress: s.progress,
    cost: 0,
    created,
    estimated_time: Math.max(1, Math.round((t.run?.durationMs ?? 0) / 1000)),
  };
  if (s.finishTime !== undefined) {
    view.completed = Math.floor(s.finishTime / 1000);
    view.actual_time = Math.max(0, view.completed - created);
  }
  if (s.status === 'SUCCESS') {
    const f = artFiles(t, publicUrl);
    const expires = (view.completed ?? created) + DAY_S;
    view.result = f.video_urls
      ? { videos: f.video_urls.map((u) => ({ url: [u], expires_at: expires })), images: f.image_urls.map((url) => ({ url })) }
      : t.output.kind === 'text'
        ? { text: describeText(t.output.prompts) }
        : { images: f.image_urls.map((url) => ({ url })) };
  }
  if (s.status === 'FAILURE') {
    view.error = { code: 'task_failed', message: s.failReason ?? ART_FAIL_REASON, ...(t.markers.outcome === 'moderation' ? { type: 'moderation' } : {}) };
  }
  return view;
}
