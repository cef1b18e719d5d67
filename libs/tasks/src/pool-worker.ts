import type { Worker } from 'bullmq';
import type { DataSource } from 'typeorm';
import { QUEUES, type Pool, type TaskJobCatalog } from '@gmg/contracts';
import { ChannelGroupResolver, ChannelRepository, TaskRepository } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { recordSweep } from '@gmg/observability';
import {
  TASK_JOB_NAMES, createBillingQueue, createTaskQueue, createTypedWorker, enqueueSettlement,
  type BillingQueue, type JobHandlers, type Redis, type TaskQueue,
} from '@gmg/queue';
import { CircuitBreaker, type AdapterRegistry } from '@gmg/upstream';
import { PoolSweeper } from './pool-sweeper';
import { TaskLifecycle, type CompletionHandler, type SettlementSink } from './task-lifecycle';
import { TaskStepProcessor, type TaskProcessorOptions } from './task-step.processor';
import { TaskViewStore } from './task-view.store';

export interface PoolWorkerDeps {
  pool: Pool;
  ds: DataSource;
  /** A worker connection (maxRetriesPerRequest: null). Shared by the worker, the queue and the view store. */
  redis: Redis;
  /** QUEUE_PREFIX: BullMQ keys and task view keys. */
  prefix: string;
  adapters: AdapterRegistry;
  logger: Logger;
  /** Default: the billing queue on the same Redis (jobId settle-<taskId>). */
  settlements?: SettlementSink;
  /** The pool's completion step (avatar assets); none for the other pools. */
  completion?: CompletionHandler;
  breaker?: CircuitBreaker;
}

export interface PoolWorkerOptions extends Omit<TaskProcessorOptions, 'timeScale'> {
  concurrency: number;
  /** POLL_INTERVAL_SCALE. */
  pollIntervalScale: number;
  /** SWEEP_INTERVAL_MS; 0 or less: no sweep scheduler (tests run sweeps by hand). */
  sweepIntervalMs: number;
  /** Open tasks untouched this long are checked for a missing job. Default 2 × sweep interval, at least 10 s. */
  orphanAfterMs?: number;
  lockDuration?: number;
  stalledInterval?: number;
  maxStalledCount?: number;
}

export interface PoolWorker {
  worker: Worker;
  queue: TaskQueue;
  processor: TaskStepProcessor;
  sweeper: PoolSweeper;
  /** Stops taking jobs, waits for active ones (unless `force`), closes the queues. Leaves redis and ds open. */
  close(force?: boolean): Promise<void>;
}

/** The worker of one pool: the `task` step machine and the `sweep` job on QUEUES[pool]. */
export async function startPoolWorker(deps: PoolWorkerDeps, opts: PoolWorkerOptions): Promise<PoolWorker> {
  const { pool, ds, redis, prefix, logger } = deps;
  const tasks = new TaskRepository(ds);
  const queue = createTaskQueue(pool, redis, prefix);
  let billing: BillingQueue | undefined;
  let settlements = deps.settlements;
  if (!settlements) {
    const q = createBillingQueue(redis, prefix);
    billing = q;
    settlements = { enqueueSettlement: (taskId) => enqueueSettlement(q, taskId) };
  }
  const lifecycle = new TaskLifecycle(tasks, new TaskViewStore(redis, prefix), settlements, logger, deps.completion);
  const processor = new TaskStepProcessor(
    {
      tasks, channels: new ChannelRepository(ds), groups: new ChannelGroupResolver(ds), adapters: deps.adapters,
      breaker: deps.breaker ?? new CircuitBreaker(), lifecycle, logger,
    },
    { ...opts, timeScale: opts.pollIntervalScale },
  );
  const orphanAfterMs = opts.orphanAfterMs ?? Math.max(10_000, 2 * opts.sweepIntervalMs);
  const sweeper = new PoolSweeper(pool, tasks, lifecycle, queue, logger, orphanAfterMs);

  const handlers: JobHandlers<TaskJobCatalog> = {
    task: (job, token) => processor.process(job, token),
    sweep: async () => {
      const r = await sweeper.sweep();
      recordSweep(pool, { timed_out: r.timedOut, requeued: r.readded });
      return r;
    },
  };
  const worker = createTypedWorker<TaskJobCatalog>(QUEUES[pool], handlers, TASK_JOB_NAMES, {
    connection: redis, prefix, concurrency: opts.concurrency,
    lockDuration: opts.lockDuration, stalledInterval: opts.stalledInterval, maxStalledCount: opts.maxStalledCount,
  });
  worker.on('failed', (job, err) => logger.error({ jobId: job?.id, job: job?.name, err: err.message }, 'job failed'));
  worker.on('error', (err) => logger.error({ err: err.message }, 'worker error'));

  if (opts.sweepIntervalMs > 0) {
    await queue.upsertJobScheduler('sweep', { every: opts.sweepIntervalMs }, {
      name: 'sweep', data: {}, opts: { removeOnComplete: true, removeOnFail: 100, attempts: 1 },
    });
  }
  logger.info({ pool, queue: QUEUES[pool], concurrency: opts.concurrency, scale: opts.pollIntervalScale }, 'pool worker started');

  return {
    worker, queue, processor, sweeper,
    async close(force = false) {
      await worker.close(force);
      await queue.close();
      await billing?.close();
    },
  };
}
