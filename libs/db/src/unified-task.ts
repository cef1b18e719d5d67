import { baseContract, fromMinor, requestContract, type UnifiedTask } from '@gmg/contracts';
import type { TaskRecord } from './repositories/task.repository';

const secs = (d: Date): number => Math.floor(d.getTime() / 1000);

/**
 * A chat call (POST /v1/messages, pool `chat`) costs its captured usage (`result.cost`), not its reservation (`price`)
 * — at most the reservation: the ledger captures `min(cost, reservation)` (CreditLeaseBook.finish), while
 * `result.cost` keeps what the usage priced (an upstream that answered past `max_tokens`).
 */
export function chatCostOf(t: Pick<TaskRecord, 'pool' | 'result' | 'price'>): bigint | undefined {
  const cost = (t.result as { cost?: unknown } | null)?.cost;
  if ((t.pool as string) !== 'chat' || typeof cost !== 'string' || !/^\d+$/.test(cost)) return undefined;
  const priced = BigInt(cost);
  return priced < t.price ? priced : t.price;
}

/**
 * What a task costs its account, minor units: 0 once failed (refunded); once completed, what was captured (a per-asset
 * partial capture, a chat call's usage: `captured`) or else its price; before that, the price held.
 */
export function costMinor(status: TaskRecord['status'], price: bigint, captured: bigint | null | undefined): bigint {
  if (status === 'failed') return 0n;
  return status === 'completed' ? (captured ?? price) : price;
}

/** The unified task of spec 2.2 from a task row. `cost`: 0 once failed (refunded), what was captured once completed. */
export function toUnifiedTask(t: TaskRecord): UnifiedTask {
  // A custom (whitelisted, unregistered) model runs on the base contract of its pool.
  const contract =
    requestContract({ model: t.model, derived: t.request?.derived ?? {} }) ??
    (t.pool === 'image' || t.pool === 'video' ? baseContract(t.model, t.pool === 'video' ? 'video_generation' : 'image_generation') : undefined);
  const u: UnifiedTask = {
    id: t.id,
    object: 'generation.task',
    model: t.requestedModel,
    status: t.status,
    progress: t.status === 'completed' ? 100 : t.progress,
    cost: fromMinor(costMinor(t.status, t.price, t.captureAmount ?? chatCostOf(t))),
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
