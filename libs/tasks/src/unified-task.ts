import { baseContract, fromMinor, requestContract, type UnifiedTask } from '@gmg/contracts';
import type { TaskRecord } from '@gmg/db';

const secs = (d: Date): number => Math.floor(d.getTime() / 1000);

/** The unified task of spec 2.2 from a task row. `cost` is the price, and 0 once failed (refunded). */
export function toUnifiedTask(t: TaskRecord): UnifiedTask {
  // A custom (whitelisted, unregistered) model runs on the base contract of its pool.
  const contract = requestContract({ model: t.model, derived: t.request?.derived ?? {} })
    ?? (t.pool === 'image' || t.pool === 'video' ? baseContract(t.model, t.pool === 'video' ? 'video_generation' : 'image_generation') : undefined);
  const u: UnifiedTask = {
    id: t.id,
    object: 'generation.task',
    model: t.requestedModel,
    status: t.status,
    progress: t.status === 'completed' ? 100 : t.progress,
    cost: t.status === 'failed' ? 0 : fromMinor(t.price),
    created: secs(t.createdAt),
  };
  if (contract) u.estimated_time = contract.estimatedSeconds;
  if (t.completedAt) {
    u.completed = secs(t.completedAt);
    u.actual_time = Math.max(0, u.completed - u.created);
  }
  if (t.status === 'completed' && t.result) u.result = t.result;
  if (t.status === 'failed' && t.error) u.error = t.error;
  return u;
}
