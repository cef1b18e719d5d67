import { randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { AckShape, ExpectedOutput } from '@gmg/contracts';
import type { SimOutcome } from './sim-scenario';

/** One asset of a simulated avatar review: when it is decided (ms after the batch started) and how. */
export interface SimAvatarAsset {
  name: string;
  decideAtMs: number;
  rejected: boolean;
}

/** One simulated task: everything needed to answer polls; its state is computed from the clock. */
export interface SimTask {
  id: string;
  model: string;
  ack: AckShape;
  expected: ExpectedOutput;
  outcome: SimOutcome;
  startedAt: number;
  durationMs: number;
  /** Avatar batches only: each asset's planned review. */
  avatar?: SimAvatarAsset[];
  /** When POST /v1/tasks/<id>/cancel stopped it (the task is failed, type `cancelled`, from then on). */
  cancelledAt?: number;
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export function newTaskId(): string {
  const bytes = randomBytes(24);
  let s = 'task_';
  for (const b of bytes) s += ALPHABET[b % ALPHABET.length];
  return s;
}

/**
 * Tasks and idempotency keys in memory, bounded: the least recently used entries are forgotten (a forgotten task
 * answers 404, like an upstream that purged it).
 */
export class SimTaskStore<T extends { id: string } = SimTask> {
  protected readonly tasks: LRUCache<string, T>;
  private readonly byIdempotencyKey: LRUCache<string, string>;
  /** Keys whose first submit already got its simulated 503 (`[sim:error503once]`). */
  private readonly failedOnce: LRUCache<string, true>;

  constructor(maxTasks = 50_000) {
    this.tasks = new LRUCache({ max: maxTasks });
    this.byIdempotencyKey = new LRUCache({ max: maxTasks });
    this.failedOnce = new LRUCache({ max: maxTasks });
  }

  get(id: string): T | undefined {
    return this.tasks.get(id);
  }

  byKey(idempotencyKey: string): T | undefined {
    const id = this.byIdempotencyKey.get(idempotencyKey);
    return id === undefined ? undefined : this.tasks.get(id);
  }

  add(task: T, idempotencyKey?: string): void {
    this.tasks.set(task.id, task);
    if (idempotencyKey) this.byIdempotencyKey.set(idempotencyKey, task.id);
  }

  /** True the first time a key is seen (that submit fails), false afterwards. */
  firstFailure(key: string): boolean {
    if (this.failedOnce.has(key)) return false;
    this.failedOnce.set(key, true);
    return true;
  }

  get size(): number {
    return this.tasks.size;
  }
}
