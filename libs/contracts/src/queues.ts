/**
 * Queue names. Their values are Redis key prefixes: renaming one strands every job already in it.
 */
export const QUEUES = Object.freeze({
  image: 'gmg-image',
  video: 'gmg-video',
  artgen: 'gmg-artgen',
  avatar: 'gmg-avatar',
  billing: 'gmg-billing',
  /** Signed webhook deliveries (docs/webhooks.md); consumed by the billing process. */
  webhook: 'gmg-webhook',
} as const);

export type Pool = 'image' | 'video' | 'artgen' | 'avatar';
export const POOLS: readonly Pool[] = Object.freeze(['image', 'video', 'artgen', 'avatar'] as const);

/** The queues sharded by QUEUE_SHARDS: every pool, and billing's two (settlements, webhook deliveries). */
export type ShardedQueue = Pool | 'billing' | 'webhook';
export const SHARDED_QUEUES: readonly ShardedQueue[] = Object.freeze([...POOLS, 'billing', 'webhook'] as const);
/** The most shards QUEUE_SHARDS gives one queue: billing looks this far for jobs left on a retired shard. */
export const MAX_QUEUE_SHARDS = 64;

/** Job names per queue (the catalog). A handler map typed over it makes a missing handler a compile error. */
export interface TaskJobCatalog {
  /** Drives one task through its step machine: submit to an upstream, then poll it. */
  task: TaskJobData;
  /** Periodic: fail tasks past their deadline, re-add pending tasks that lost their job. */
  sweep: SweepJobData;
}
export interface BillingJobCatalog {
  /** Capture (completed) or release (failed) the hold of one terminal task. jobId = `settle-<taskId>`. */
  settle: SettleJobData;
  /** Periodic: re-send settlements of terminal tasks left unsettled. */
  sweep: SweepJobData;
}

export interface WebhookJobCatalog {
  /** POST the unified task of one terminal task to its callback_url. jobId = `webhook-<taskId>-<status>`. */
  deliver: WebhookJobData;
}

export interface TaskJobData {
  taskId: string;
  /** Upstream submit attempts so far (for backoff and failover). Optional: old jobs lack it. */
  submitAttempts?: number;
  /** Consecutive failed polls (transient upstream errors while polling). */
  pollFailures?: number;
  /** Channels already tried and failed for this task, so failover picks another one. */
  excludedChannels?: string[];
  /** Retryable submit failures per channel id, for failover. Optional: jobs enqueued before it lack it. */
  channelFailures?: Record<string, number>;
  /** W3C trace context of the submission (issue 12: one trace from the edge to billing). Absent when tracing is off. */
  trace?: Record<string, string>;
}
export interface SettleJobData {
  taskId: string;
  /** W3C trace context of the step that finished the task. Absent when tracing is off. */
  trace?: Record<string, string>;
}
export interface WebhookJobData {
  taskId: string;
  /** The terminal status the delivery announces (a cancelled task is `failed` with error.type `cancelled`). */
  event: 'completed' | 'failed';
}
export interface SweepJobData {
  /** Set by the scheduler; informative only. */
  scheduledAt?: number;
}

/** jobId conventions: the reconciler and the billing sweeper rely on them being derived, not random. */
export const taskJobId = (taskId: string): string => taskId;
export const settleJobId = (taskId: string): string => `settle-${taskId}`;
/** One delivery job per task and terminal state: a second enqueue (settlement retried) collapses into it. */
export const webhookJobId = (taskId: string, event: WebhookJobData['event']): string => `webhook-${taskId}-${event}`;
