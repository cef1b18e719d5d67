export { createRedis, checkRedisPolicy, redisEvictionPolicy } from './connection';
export type { Redis, RedisConfig } from './connection';
export { Producers, createTaskQueue, createBillingQueue, enqueueSettlement, TASK_JOB_OPTIONS, SETTLE_JOB_OPTIONS } from './producers';
export type { TaskQueue, BillingQueue } from './producers';
export { createTypedWorker, requireTaskId, TASK_JOB_NAMES, BILLING_JOB_NAMES, WORKER_LOCK_DEFAULTS } from './typed-worker';
export type { JobHandlers, TypedWorkerOptions } from './typed-worker';
export { startHealthServer } from './health-server';
export type { HealthServer, HealthServerOptions, HealthCheck } from './health-server';
export { onShutdownSignals } from './graceful-shutdown';
