import type { TaskResult, UnifiedTask } from '@gmg/contracts';
import { avatarResult } from './avatar/avatar-review';
import { normalizeImageFormat } from './media/image-renderer';
import { SIM_FAIL_MESSAGE, SIM_MODERATION_MESSAGE, stateAt, type SimState } from './sim-scenario';
import type { SimTask } from './sim-task.store';

const DAY_S = 24 * 3600;
const IMAGE_EXT = { jpeg: 'jpg', png: 'png', webp: 'webp' } as const;
export const DEFAULT_IMAGE_SIDE = 1024;
export const DEFAULT_VIDEO_SECONDS = 5;

/** File names carry everything needed to render them, so a link still works after its task left the store. */
export function imageFileName(task: SimTask, index: number): string {
  const w = task.expected.width ?? DEFAULT_IMAGE_SIDE;
  const h = task.expected.height ?? DEFAULT_IMAGE_SIDE;
  return `${task.id}-${index}-${w}x${h}.${IMAGE_EXT[normalizeImageFormat(task.expected.format)]}`;
}

export function videoFileName(task: SimTask, index: number): string {
  return `${task.id}-${index}-${task.expected.durationSeconds ?? DEFAULT_VIDEO_SECONDS}s.mp4`;
}

function resultOf(task: SimTask, publicUrl: string, endedAtS: number): TaskResult {
  const n = Math.max(1, task.expected.count);
  const range = Array.from({ length: n }, (_, i) => i);
  switch (task.expected.kind) {
    case 'images':
      return { images: range.map((i) => ({ url: `${publicUrl}/files/${imageFileName(task, i)}` })) };
    case 'videos':
      return { videos: range.map((i) => ({ url: [`${publicUrl}/files/${videoFileName(task, i)}`], expires_at: endedAtS + DAY_S })) };
    case 'assets': {
      if (task.avatar) return avatarResult(task);
      const assets = range.map((i) => ({ asset_id: `asset_${task.id.slice(5)}_${i}`, asset_url: `asset://asset_${task.id.slice(5)}_${i}`, status: 'Active' }));
      return { assets, usable_assets: assets };
    }
    default:
      return { text: 'simulated result' };
  }
}

/** The unified task of spec 2.2 as the simulator shows it at `now`. */
export function unifiedTaskAt(task: SimTask, now: number, publicUrl: string): UnifiedTask {
  const s = simStateAt(task, now);
  const created = Math.floor(task.startedAt / 1000);
  const view: UnifiedTask = {
    id: task.id,
    object: 'generation.task',
    model: task.model,
    status: s.status,
    progress: s.progress,
    cost: 0,
    created,
    estimated_time: Math.max(1, Math.round(task.durationMs / 1000)),
  };
  if (s.endedAt !== undefined) {
    const endedS = Math.floor(s.endedAt / 1000);
    view.completed = endedS;
    view.actual_time = Math.max(0, endedS - created);
  }
  if (s.status === 'completed') {
    view.result = resultOf(task, publicUrl, view.completed ?? created);
    view.cost = 0.01 * Math.max(1, task.expected.count);
  }
  if (s.status === 'failed') {
    view.error = s.cancelled
      ? { code: 'task_failed', message: 'Task cancelled', type: 'cancelled' }
      : task.outcome === 'moderation'
        ? { code: 'task_failed', message: SIM_MODERATION_MESSAGE, type: 'moderation' }
        : { code: 'task_failed', message: SIM_FAIL_MESSAGE };
  }
  return view;
}

/** The clock's state, frozen at the cancel: a task cancelled before it ended is failed from then on. */
export function simStateAt(task: SimTask, now: number): SimState & { cancelled?: boolean } {
  if (task.cancelledAt === undefined || task.cancelledAt > now) return stateAt(task, now);
  const s = stateAt(task, task.cancelledAt);
  if (s.status === 'completed' || s.status === 'failed') return s;
  return { status: 'failed', progress: s.progress, endedAt: task.cancelledAt, cancelled: true };
}
