import { Queue, type JobsOptions } from 'bullmq';
import {
  QUEUES,
  POOLS,
  settleJobId,
  taskJobId,
  webhookJobId,
  type BillingJobCatalog,
  type Pool,
  type SettleJobData,
  type ShardedQueue,
  type TaskJobCatalog,
  type TaskJobData,
  type WebhookJobCatalog,
  type WebhookJobData,
} from '@gmg/contracts';
import { SpanKind, traceCarrier, withSpan, type QueueCounts } from '@gmg/observability';
import type { Redis } from './connection';
import { BACKLOG_CAPS, BacklogGate, SETTLE_GATE, WEBHOOK_GATE } from './backlog';
import { DuePolls } from './due-polls';
import { billingQueueKeyPrefix, queueKeyPrefix, shardOf } from './keys';
import { WORKER_LOCK_DEFAULTS } from './typed-worker';
import { markWebhookDeferred } from './webhook-deferral';

export type TaskQueue = Queue<TaskJobCatalog[keyof TaskJobCatalog], unknown, keyof TaskJobCatalog>;
export type BillingQueue = Queue<BillingJobCatalog[keyof BillingJobCatalog], unknown, keyof BillingJobCatalog>;
export type WebhookQueue = Queue<WebhookJobCatalog[keyof WebhookJobCatalog], unknown, keyof WebhookJobCatalog>;

/**
 * Default options per job kind. A task job ends when its task ends or starts polling (the poll path takes it from
 * there, due-polls.ts): it is removed at once, the task row being the record (and a kept one would cost ~2 KB per
 * task for an hour, for nothing: the orphan sweep re-adds a task's job when the task has neither a job nor a poll).
 */
export const TASK_JOB_OPTIONS: JobsOptions = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 2000 },
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3600, count: BACKLOG_CAPS.failedJobs },
};
export const SETTLE_JOB_OPTIONS: JobsOptions = {
  attempts: 20,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: { age: 24 * 3600, count: 100_000 },
  removeOnFail: { age: 30 * 24 * 3600, count: BACKLOG_CAPS.failedJobs },
};

/** Shard `shard` of a pool's task queue (keys `{<prefix>:<queue>:<shard>}:...`, one slot per shard). */
export function createTaskQueue(pool: Pool, connection: Redis, prefix: string, shard = 0): TaskQueue {
  return new Queue(QUEUES[pool], { connection, prefix: queueKeyPrefix(prefix, QUEUES[pool], shard), defaultJobOptions: TASK_JOB_OPTIONS }) as TaskQueue;
}

/** Every shard of a pool's task queue, index = shard. */
export function createTaskQueueShards(pool: Pool, connection: Redis, prefix: string, shards: number): TaskQueue[] {
  return Array.from({ length: Math.max(1, shards) }, (_, i) => createTaskQueue(pool, connection, prefix, i));
}

/** Shard `shard` of the settlement queue (billingQueueKeyPrefix: shard 0 keeps the unsharded name). */
export function createBillingQueue(connection: Redis, prefix: string, shard = 0): BillingQueue {
  return new Queue(QUEUES.billing, {
    connection,
    prefix: billingQueueKeyPrefix(prefix, QUEUES.billing, shard),
    defaultJobOptions: SETTLE_JOB_OPTIONS,
  }) as BillingQueue;
}

/** Every shard of the settlement queue (QUEUE_SHARDS billing=K), index = shard. */
export function createBillingQueueShards(connection: Redis, prefix: string, shards: number): BillingQueue[] {
  return Array.from({ length: Math.max(1, shards) }, (_, i) => createBillingQueue(connection, prefix, i));
}

/** Retry policy of webhook deliveries (WEBHOOK_ATTEMPTS, WEBHOOK_BACKOFF_MS). */
interface WebhookRetry {
  attempts: number;
  backoffMs: number;
}

/**
 * Shard `shard` of the webhook queue. Deliveries: exponential backoff from `backoffMs`, `attempts` in all
 * (docs/webhooks.md: 14 attempts from 10 s reach ~23 h). Completed jobs are kept 48 h, so a re-enqueue within the
 * retry horizon collapses into them.
 */
export function createWebhookQueue(connection: Redis, prefix: string, retry: WebhookRetry, shard = 0): WebhookQueue {
  return new Queue(QUEUES.webhook, {
    connection,
    prefix: billingQueueKeyPrefix(prefix, QUEUES.webhook, shard),
    defaultJobOptions: {
      attempts: retry.attempts,
      backoff: { type: 'exponential', delay: retry.backoffMs },
      removeOnComplete: { age: 48 * 3600, count: 100_000 },
      removeOnFail: { age: 7 * 24 * 3600, count: BACKLOG_CAPS.failedJobs },
    },
  }) as WebhookQueue;
}

/** Every shard of the webhook queue (QUEUE_SHARDS webhook=K), index = shard. */
export function createWebhookQueueShards(connection: Redis, prefix: string, retry: WebhookRetry, shards: number): WebhookQueue[] {
  return Array.from({ length: Math.max(1, shards) }, (_, i) => createWebhookQueue(connection, prefix, retry, i));
}

/**
 * The shard a task's job goes to: shards[shardOf(task id, K)]. One queue is a single shard. Every producer and sweep
 * picks the same one, so a job id asked for twice lands on the same shard and stays one job.
 */
export function shardFor<Q>(queues: Q | readonly Q[], taskId: string): Q {
  if (!Array.isArray(queues)) return queues as Q;
  const list = queues as readonly Q[];
  return list[shardOf(taskId, list.length)]!;
}

/**
 * jobId = webhook-<taskId>-<event>, on the task's shard: one delivery per task and terminal state, however often it is
 * asked for. false: the shard's backlog is at its cap (BACKLOG_CAPS.webhook) and nothing was enqueued; the shard is
 * marked (webhook-deferral.ts) so that the billing sweep looks back far enough to send it later.
 */
export async function enqueueWebhook(queues: WebhookQueue | readonly WebhookQueue[], data: WebhookJobData, gate: BacklogGate = WEBHOOK_GATE): Promise<boolean> {
  const queue = shardFor(queues, data.taskId);
  if (!(await gate.admits(queue))) {
    // the billing sweep looks back to the first decline, however long ago, and sends it once there is room
    await markWebhookDeferred(queue);
    return false;
  }
  await queue.add('deliver', data, { jobId: webhookJobId(data.taskId, data.event) });
  return true;
}

/**
 * The one way to ask for a settlement. jobId = settle-<taskId> on the task's shard (shardFor): a duplicate request
 * collapses into the existing job. false: the shard's backlog is at its cap (BACKLOG_CAPS.settle) and nothing was
 * enqueued — the task stays unsettled in Postgres and the billing sweep sends it again.
 */
export async function enqueueSettlement(billing: BillingQueue | readonly BillingQueue[], taskId: string, gate: BacklogGate = SETTLE_GATE): Promise<boolean> {
  const queue = shardFor(billing, taskId);
  if (!(await gate.admits(queue))) return false;
  await withSpan('enqueue settle', { kind: SpanKind.PRODUCER, attributes: { 'messaging.destination.name': queue.name, 'gmg.task_id': taskId } }, async () => {
    const trace = traceCarrier();
    const data: SettleJobData = { taskId, ...(trace ? { trace } : {}) };
    await queue.add('settle', data, { jobId: settleJobId(taskId) });
  });
  return true;
}

/** One producer per pool shard and per settlement shard. */
export class Producers {
  /** Per pool, its shards (index = shard; QUEUE_SHARDS). */
  readonly tasks: Record<Pool, TaskQueue[]>;
  /** Per pool, its shards' due polls (index = shard): read for the queue metrics only. */
  private readonly polls: Record<Pool, DuePolls[]>;
  /** The settlement queue's shards (index = shard; QUEUE_SHARDS billing=K). */
  readonly billing: BillingQueue[];
  /** Webhook deliveries' shards, read for the queue metrics only (billing's webhook worker adds and runs them, with its options). */
  private readonly webhook: Queue[];
  constructor(
    connection: Redis,
    prefix: string,
    shards: Readonly<Partial<Record<ShardedQueue, number>>> = {},
    /** Whether the connection answers now (RedisReachability); absent: always taken as answering. */
    private readonly reachability?: { answering(): boolean },
    /** The pools' task backlog cap (BACKLOG_CAPS.taskJobs per shard; a test's own gate). */
    private readonly taskGate = new BacklogGate(BACKLOG_CAPS.taskJobs),
  ) {
    this.tasks = Object.fromEntries(POOLS.map((p) => [p, createTaskQueueShards(p, connection, prefix, shards[p] ?? 1)])) as Record<Pool, TaskQueue[]>;
    this.polls = Object.fromEntries(
      POOLS.map((p) => [p, this.tasks[p].map((_, i) => new DuePolls(connection, queueKeyPrefix(prefix, QUEUES[p], i), WORKER_LOCK_DEFAULTS.lockDuration))]),
    ) as Record<Pool, DuePolls[]>;
    this.billing = createBillingQueueShards(connection, prefix, shards.billing ?? 1);
    this.webhook = Array.from(
      { length: Math.max(1, shards.webhook ?? 1) },
      (_, i) => new Queue(QUEUES.webhook, { connection, prefix: billingQueueKeyPrefix(prefix, QUEUES.webhook, i) }),
    );
  }

  /**
   * False while this process's Redis does not answer (issue 38): a submit is refused before any money moves, since
   * its task could not be queued now.
   */
  accepting(): boolean {
    return this.reachability?.answering() ?? true;
  }

  /**
   * False while the pool's task backlog (waiting, delayed, prioritized jobs over its shards) is at its cap
   * (BACKLOG_CAPS.taskJobs per shard; read at most once a second): a submit is refused before any money moves.
   */
  hasRoom(pool: Pool): Promise<boolean> {
    return this.taskGate.admits(this.tasks[pool]);
  }

  /** The shard queue a task belongs to (shardOf its id): every producer and sweep picks the same one. */
  taskQueue(pool: Pool, taskId: string): TaskQueue {
    const shards = this.tasks[pool];
    return shards[shardOf(taskId, shards.length)]!;
  }

  /** jobId = taskId: re-adding a task that already has a job is a no-op (the reconciler relies on it). */
  async enqueueTask(pool: Pool, taskId: string): Promise<void> {
    await withSpan('enqueue task', { kind: SpanKind.PRODUCER, attributes: { 'messaging.destination.name': QUEUES[pool], 'gmg.task_id': taskId } }, async () => {
      const trace = traceCarrier();
      const data: TaskJobData = { taskId, submitAttempts: 0, pollFailures: 0, excludedChannels: [], ...(trace ? { trace } : {}) };
      await this.taskQueue(pool, taskId).add('task', data, { jobId: taskJobId(taskId) });
    });
  }

  /**
   * Per queue: job counts (BullMQ getJobCounts) and the wait of its oldest waiting job, for the queue metrics. A
   * pool's queue adds its poll path: `polling` (tasks on it, due or claimed) and `polls_overdue` (due, not claimed
   * yet), and its oldest wait counts an overdue poll too. A sharded pool reports the sum of its shards' counts and
   * the oldest wait among them; so do billing's two queues (settlements, webhook deliveries), each on its own.
   */
  async jobCounts(now = Date.now()): Promise<QueueCounts> {
    const queues: Queue[] = [...Object.values(this.tasks).flat(), ...this.billing, ...this.webhook];
    const polls: Array<DuePolls | undefined> = Object.values(this.polls).flat();
    const stats = await Promise.all(
      queues.map(async (q, i) => {
        const [counts, oldest, p] = await Promise.all([
          q.getJobCounts('waiting', 'delayed', 'active', 'failed', 'prioritized'),
          // getWaiting lists oldest first: element 0 is the job waiting longest
          q.getWaiting(0, 0),
          polls[i]?.counts(now),
        ]);
        // ready since it was added, or since its last step ended (a resumed step machine job)
        let since = oldest[0] ? Math.max(oldest[0].timestamp, oldest[0].processedOn ?? 0) : now;
        if (p) {
          counts.polling = p.waiting + p.claimed;
          counts.polls_overdue = p.overdue;
          if (p.overdue > 0 && p.oldestDueAt !== null) since = Math.min(since, p.oldestDueAt);
        }
        return { counts, oldestWaitingSeconds: Math.max(0, (now - since) / 1000) };
      }),
    );
    const out: QueueCounts = {};
    queues.forEach((q, i) => {
      const s = stats[i]!;
      const prev = out[q.name];
      if (!prev) {
        out[q.name] = s;
        return;
      }
      for (const [k, v] of Object.entries(s.counts)) prev.counts[k] = (prev.counts[k] ?? 0) + v;
      prev.oldestWaitingSeconds = Math.max(prev.oldestWaitingSeconds, s.oldestWaitingSeconds);
    });
    return out;
  }

  /** The settlement of a task ended outside a worker (the cancel route); jobId dedup as everywhere. */
  async requestSettlement(taskId: string): Promise<void> {
    await enqueueSettlement(this.billing, taskId);
  }

  /**
   * Drops what drives a task that ended outside its worker (cancel): its job when it is waiting or delayed, its due
   * poll when it polls; an active job or a claimed poll is left to its step, which re-reads the row, sees the
   * terminal status and ends. True when something was removed.
   */
  async removeTaskJob(pool: Pool, taskId: string): Promise<boolean> {
    const shards = this.polls[pool];
    if (await shards[shardOf(taskId, shards.length)]!.remove(taskId)) return true;
    const job = await this.taskQueue(pool, taskId).getJob(taskJobId(taskId));
    if (!job) return false;
    const state = await job.getState();
    if (state !== 'waiting' && state !== 'delayed' && state !== 'prioritized') return false;
    try {
      await job.remove();
      return true;
    } catch {
      // Taken by a worker between the state read and the remove: its step ends the job.
      return false;
    }
  }

  async close(): Promise<void> {
    await Promise.all([
      ...Object.values(this.tasks)
        .flat()
        .map((q) => q.close()),
      ...this.billing.map((q) => q.close()),
      ...this.webhook.map((q) => q.close()),
    ]);
  }
}
