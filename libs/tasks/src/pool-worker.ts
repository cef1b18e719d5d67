import type { Worker } from 'bullmq';
import type { DataSource } from 'typeorm';
import { QUEUES, type Pool, type TaskJobCatalog } from '@gmg/contracts';
import { ChannelGroupResolver, ChannelHealthRepository, ChannelRepository, TaskRecoveryRepository, TaskRepository, type BackOff } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { recordSweep, reportChannelHealth } from '@gmg/observability';
import {
  DuePolls,
  TASK_JOB_NAMES,
  WORKER_LOCK_DEFAULTS,
  createBillingQueueShards,
  createTaskQueueShards,
  createTypedWorker,
  enqueueSettlement,
  healSentinelKey,
  queueKeyPrefix,
  shardOf,
  sweepCursorKey,
  type BillingQueue,
  type JobHandlers,
  type Redis,
  type TaskQueue,
} from '@gmg/queue';
import { ChannelHealthReporter, CircuitBreaker, MessagesUpstreamClient, type AdapterRegistry, type MediaKeeper } from '@gmg/upstream';
import { ChannelProbe } from './channel-probe';
import { ChannelSecretCache } from './channel-secret-cache';
import { PollLoop } from './poll-loop';
import { PoolSweeper } from './pool-sweeper';
import { SweepKeeper, sweepSchedule } from '@gmg/queue';
import { TaskLifecycle, type CompletionHandler, type SettlementSink } from './task-lifecycle';
import { TaskStepProcessor, type TaskProcessorOptions } from './task-step.processor';
import { TaskViewStore } from './task-view.store';

export interface PoolWorkerDeps {
  pool: Pool;
  ds: DataSource;
  /** A worker connection (maxRetriesPerRequest: null). Shared by the worker, the queue and the view store. */
  redis: Redis;
  /** QUEUE_PREFIX: inside the hash tag of the BullMQ keys and the task view keys. */
  prefix: string;
  /** The pool's queue shards (QUEUE_SHARDS); this process consumes all of them. Default 1. */
  shards?: number;
  /** The settlement queue's shards (QUEUE_SHARDS billing=K) the default settlements go to. Default 1. */
  billingShards?: number;
  adapters: AdapterRegistry;
  /** Keeps the files vendor protocols hand back (results kept by us): the result store and its signed links. */
  keeper: MediaKeeper;
  logger: Logger;
  /** Default: the billing queue on the same Redis (jobId settle-<taskId>). */
  settlements?: SettlementSink;
  /** The pool's completion step (avatar assets); none for the other pools. */
  completion?: CompletionHandler;
  breaker?: CircuitBreaker;
  /** How long a failing channel cools down (doubling with each failed trial, up to maxMs). Default 30 s … 15 min. */
  channelBackOff?: BackOff;
}

export interface PoolWorkerOptions extends Omit<TaskProcessorOptions, 'timeScale'> {
  concurrency: number;
  /** POLL_INTERVAL_SCALE. */
  pollIntervalScale: number;
  /**
   * SWEEP_INTERVAL_MS; 0 or less: no sweep scheduler and no keeper (tests run sweeps by hand). Otherwise a
   * SweepKeeper re-creates the scheduler every interval and rebuilds the pool after a Redis loss.
   */
  sweepIntervalMs: number;
  /** Open tasks untouched this long are checked for a missing job. Default 2 × sweep interval, at least 10 s. */
  orphanAfterMs?: number;
  /** Open tasks one sweep checks at most (PoolSweeperDeps.maxRowsPerSweep; default 20,000). */
  maxRowsPerSweep?: number;
  lockDuration?: number;
  stalledInterval?: number;
  maxStalledCount?: number;
  /** Polls one claim takes at most (PollLoopOptions.batch). */
  pollBatch?: number;
  /** CHANNEL_PROBE_INTERVAL_MS: how often the channel probe looks for due trials; 0 or absent: no probe here. */
  channelProbeIntervalMs?: number;
}

export interface PoolWorker {
  /** Shard 0's worker and queue (the sweep job's queue); `workers` / `queues` hold every shard, index = shard. */
  worker: Worker;
  queue: TaskQueue;
  workers: Worker[];
  queues: TaskQueue[];
  processor: TaskStepProcessor;
  /** Each shard's due polls, index = shard (the steady poll path). */
  polls: DuePolls[];
  /** The steady poll path's claim loop over every shard. */
  pollLoop: PollLoop;
  sweeper: PoolSweeper;
  /** The channel health probe (tests tick it by hand); started only with channelProbeIntervalMs > 0. */
  probe: ChannelProbe;
  /** Undefined when sweepIntervalMs <= 0. */
  keeper?: SweepKeeper;
  /** Stops taking jobs, waits for active ones (unless `force`), closes the queues. Leaves redis and ds open. */
  close(force?: boolean): Promise<void>;
}

/** Submits pick among the live candidates (read each time); polls reuse the channel row for a few seconds. */
function channelsForSteps(repo: ChannelRepository): Pick<ChannelRepository, 'candidates' | 'getWithSecret'> {
  const secrets = new ChannelSecretCache(repo);
  return { candidates: (model, group) => repo.candidates(model, group), getWithSecret: (id) => secrets.getWithSecret(id) };
}

/**
 * The worker of one pool: the `task` step machine on every shard of QUEUES[pool] (one BullMQ worker per shard,
 * sharing the process's concurrency), and the `sweep` job on shard 0.
 */
export async function startPoolWorker(deps: PoolWorkerDeps, opts: PoolWorkerOptions): Promise<PoolWorker> {
  const { pool, ds, redis, prefix, logger } = deps;
  const tasks = new TaskRepository(ds);
  const queues = createTaskQueueShards(pool, redis, prefix, deps.shards ?? 1);
  const queue = queues[0]!;
  let billing: BillingQueue[] = [];
  let settlements = deps.settlements;
  if (!settlements) {
    const q = createBillingQueueShards(redis, prefix, deps.billingShards ?? 1);
    billing = q;
    settlements = { enqueueSettlement: (taskId) => enqueueSettlement(q, taskId) };
  }
  const views = new TaskViewStore(redis, prefix);
  const lifecycle = new TaskLifecycle(tasks, views, settlements, logger, deps.completion);
  const leaseMs = opts.lockDuration ?? WORKER_LOCK_DEFAULTS.lockDuration;
  const polls = queues.map((_, shard) => new DuePolls(redis, queueKeyPrefix(prefix, QUEUES[pool], shard), leaseMs));
  const breaker = deps.breaker ?? new CircuitBreaker();
  const healthStore = new ChannelHealthRepository(ds, deps.channelBackOff);
  const health = new ChannelHealthReporter(healthStore, breaker, (err) => logger.warn({ err: (err as Error).message }, 'channel health write failed'));
  const processor = new TaskStepProcessor(
    {
      tasks,
      channels: channelsForSteps(new ChannelRepository(ds)),
      groups: new ChannelGroupResolver(ds),
      adapters: deps.adapters,
      keeper: deps.keeper,
      breaker,
      health,
      lifecycle,
      logger,
    },
    { ...opts, timeScale: opts.pollIntervalScale },
    // Once polling, a task's polls wait in its shard's due set (PollLoop), not in BullMQ's delayed set.
    (taskId, dueAt, failures, trace) => polls[shardOf(taskId, polls.length)]!.add(taskId, dueAt, failures, trace),
  );
  const orphanAfterMs = opts.orphanAfterMs ?? Math.max(10_000, 2 * opts.sweepIntervalMs);
  const sweeper = new PoolSweeper({
    pool,
    tasks,
    recovery: new TaskRecoveryRepository(ds),
    lifecycle,
    views,
    queues,
    polls,
    redis,
    cursorKey: sweepCursorKey(queueKeyPrefix(prefix, QUEUES[pool], 0)),
    logger,
    orphanAfterMs,
    maxRowsPerSweep: opts.maxRowsPerSweep,
  });
  const pollLoop = new PollLoop(
    { pool, shards: polls, processor, tasks, requeue: (taskId) => sweeper.requeue(taskId), logger },
    { concurrency: opts.concurrency, batch: opts.pollBatch },
  );

  const handlers: JobHandlers<TaskJobCatalog> = {
    task: (job, token) => processor.process(job, token),
    sweep: async () => {
      const r = await sweeper.sweep();
      recordSweep(pool, { timed_out: r.timedOut, requeued: r.readded });
      return r;
    },
  };
  const perShard = Math.max(1, Math.ceil(opts.concurrency / queues.length));
  const workers = queues.map((_, shard) => {
    const w = createTypedWorker<TaskJobCatalog>(QUEUES[pool], handlers, TASK_JOB_NAMES, {
      connection: redis,
      prefix,
      shard,
      concurrency: perShard,
      lockDuration: opts.lockDuration,
      stalledInterval: opts.stalledInterval,
      maxStalledCount: opts.maxStalledCount,
    });
    w.on('failed', (job, err) => logger.error({ shard, jobId: job?.id, job: job?.name, err: err.message }, 'job failed'));
    w.on('error', (err) => logger.error({ shard, err: err.message }, 'worker error'));
    return w;
  });
  const worker = workers[0]!;
  pollLoop.start();
  const trialMessages = new MessagesUpstreamClient();
  const probe = new ChannelProbe({
    health: healthStore,
    channels: new ChannelRepository(ds),
    trial: { adapters: deps.adapters, messages: trialMessages },
    logger,
  });
  if ((opts.channelProbeIntervalMs ?? 0) > 0) probe.start(opts.channelProbeIntervalMs!);
  // gmg_channel_health on this process's /metrics: the shared health every replica reads
  reportChannelHealth(() => healthStore.snapshot());

  let keeper: SweepKeeper | undefined;
  if (opts.sweepIntervalMs > 0) {
    const every = opts.sweepIntervalMs;
    keeper = new SweepKeeper({
      name: `pool ${pool}`,
      redis,
      intervalMs: every,
      logger,
      sentinelKey: queues.map((_, shard) => healSentinelKey(queueKeyPrefix(prefix, QUEUES[pool], shard))),
      ensureSchedule: sweepSchedule(queue, every),
      rebuild: () => sweeper.rebuild(),
    });
    await keeper.start();
  }
  logger.info(
    {
      pool,
      queue: QUEUES[pool],
      shards: queues.length,
      concurrency: opts.concurrency,
      scale: opts.pollIntervalScale,
      // never the links' key: only whether vendors get callback URLs, and the safety-net factor
      callbacks: opts.callbacks ? { pollFactor: opts.callbacks.pollFactor } : false,
    },
    'pool worker started',
  );

  return {
    worker,
    queue,
    workers,
    queues,
    processor,
    polls,
    pollLoop,
    sweeper,
    probe,
    keeper,
    async close(force = false) {
      await keeper?.stop();
      await probe.stop();
      await trialMessages.close();
      await Promise.all([...workers.map((w) => w.close(force)), pollLoop.stop()]);
      await Promise.all(queues.map((q) => q.close()));
      await Promise.all(billing.map((q) => q.close()));
    },
  };
}
