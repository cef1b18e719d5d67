import { UnrecoverableError, Worker, type Job, type WorkerOptions } from 'bullmq';
import type { BillingJobCatalog, TaskJobCatalog, WebhookJobCatalog } from '@gmg/contracts';
import type { Redis } from './connection';
import { queueKeyPrefix } from './keys';

/** One handler per job name of a catalog: a missing one is a compile error. */
export type JobHandlers<C> = {
  [K in keyof C & string]: (job: Job<C[K], unknown, K>, token: string | undefined) => Promise<unknown>;
};

/** Every job name of a catalog, listed at runtime: a name missing from the list is a compile error too. */
type ExactNames<C, L extends readonly string[]> = Exclude<keyof C & string, L[number]> extends never ? L : never;
const names =
  <C>() =>
  <L extends readonly (keyof C & string)[]>(list: ExactNames<C, L>): L =>
    list;

export const TASK_JOB_NAMES = names<TaskJobCatalog>()(['task', 'sweep'] as const);
export const BILLING_JOB_NAMES = names<BillingJobCatalog>()(['settle', 'sweep'] as const);
export const WEBHOOK_JOB_NAMES = names<WebhookJobCatalog>()(['deliver'] as const);

/**
 * Stall detection: a worker killed with jobs active loses its lock after `lockDuration`; the next stalled check
 * (every `stalledInterval`) puts the job back in wait. maxStalledCount is high because a stalled job is resumed by
 * an idempotent step machine, not retried blindly.
 */
export const WORKER_LOCK_DEFAULTS = Object.freeze({ lockDuration: 30_000, stalledInterval: 30_000, maxStalledCount: 1000 });

export interface TypedWorkerOptions {
  connection: Redis;
  /** QUEUE_PREFIX: the worker's BullMQ prefix is the queue's hash-tagged one (keys.ts), as its producers use. */
  prefix: string;
  /** The shard of a pool's task queue (`{<prefix>:<queue>:<shard>}`); unset: the queue's unsharded name. */
  shard?: number;
  /** The queue's whole bracketed BullMQ prefix (a shard of billing's queues: billingQueueKeyPrefix); wins over prefix and shard. */
  queuePrefix?: string;
  concurrency: number;
  lockDuration?: number;
  stalledInterval?: number;
  maxStalledCount?: number;
  /** Start later with worker.run() (default: start now). */
  autorun?: boolean;
  extra?: Partial<WorkerOptions>;
}

/**
 * A BullMQ worker dispatching by job name. The handler map is checked against the catalog's names at start
 * (a JS caller or a cast can still hand over an incomplete map); an unknown job name fails its job for good.
 */
export function createTypedWorker<C>(
  queueName: string,
  handlers: JobHandlers<C>,
  expectedNames: readonly (keyof C & string)[],
  opts: TypedWorkerOptions,
): Worker {
  const missing = expectedNames.filter((n) => typeof (handlers as Record<string, unknown>)[n] !== 'function');
  if (missing.length > 0) throw new Error(`queue ${queueName}: no handler for job(s) ${missing.join(', ')}`);
  const table = handlers as unknown as Record<string, (job: Job, token: string | undefined) => Promise<unknown>>;
  return new Worker(
    queueName,
    async (job: Job, token?: string) => {
      const handler = Object.prototype.hasOwnProperty.call(table, job.name) ? table[job.name] : undefined;
      if (!handler) throw new UnrecoverableError(`queue ${queueName}: unknown job name "${job.name}"`);
      return handler(job, token);
    },
    {
      connection: opts.connection,
      prefix: opts.queuePrefix ?? queueKeyPrefix(opts.prefix, queueName, opts.shard),
      concurrency: opts.concurrency,
      lockDuration: opts.lockDuration ?? WORKER_LOCK_DEFAULTS.lockDuration,
      stalledInterval: opts.stalledInterval ?? WORKER_LOCK_DEFAULTS.stalledInterval,
      maxStalledCount: opts.maxStalledCount ?? WORKER_LOCK_DEFAULTS.maxStalledCount,
      autorun: opts.autorun ?? true,
      ...opts.extra,
    },
  );
}

/** Payload check at dequeue: a job without a usable task id can never succeed. */
export function requireTaskId(data: unknown): string {
  const id = (data as { taskId?: unknown } | null)?.taskId;
  if (typeof id !== 'string' || id.length === 0 || id.length > 200) throw new UnrecoverableError('job data has no valid taskId');
  return id;
}
