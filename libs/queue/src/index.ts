export { WORKER_MIN_COMMAND_TIMEOUT_MS, createRedis, checkRedisPolicy, redisPrimaries } from './connection';
export {
  queueKeyPrefix,
  billingQueueKeyPrefix,
  taskViewKey,
  idempotencyKey,
  limiterKey,
  uploadQuotaKey,
  healSentinelKey,
  sweepCursorKey,
  webhookDeferredKey,
  shardOf,
  upstreamCallbackKey,
} from './keys';
export type { Redis } from './connection';
export {
  Producers,
  createTaskQueue,
  createTaskQueueShards,
  createBillingQueue,
  createBillingQueueShards,
  createWebhookQueue,
  createWebhookQueueShards,
  enqueueSettlement,
  enqueueWebhook,
} from './producers';
export type { TaskQueue, BillingQueue, WebhookQueue } from './producers';
export { createTypedWorker, requireTaskId, TASK_JOB_NAMES, BILLING_JOB_NAMES, WEBHOOK_JOB_NAMES, WORKER_LOCK_DEFAULTS } from './typed-worker';
export { DuePolls } from './due-polls';
export { BacklogGate } from './backlog';
export { clearWebhookDeferral, webhookDeferrals } from './webhook-deferral';
export type { ClaimedPoll, PollSettlement } from './due-polls';
export type { JobHandlers } from './typed-worker';
export { evaluateLiveness, startHealthServer } from './health-server';
export { evaluateReadiness } from './readiness';
export type { HealthCheck } from './readiness';
export { onShutdownSignals } from './graceful-shutdown';
export { jobPresence } from './job-presence';
export { drainRetiredShards } from './retired-shards';
export type { JobPresence } from './job-presence';
export { REDIS_BYTES_PER_TASK, checkRedisMemory, checkRedisReady, redisMaxmemoryFor, redisMemory } from './redis-memory';
export { RedisReachability } from './reachability';
export { SweepKeeper, sweepSchedule } from './sweep-keeper';
