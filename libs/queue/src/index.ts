export { createRedis, checkRedisPolicy, redisEvictionPolicy } from './connection';
export type { Redis, RedisConfig } from './connection';
export { Producers, createTaskQueue, createBillingQueue, queueNameOf, TASK_JOB_OPTIONS, SETTLE_JOB_OPTIONS } from './producers';
export type { TaskQueue, BillingQueue } from './producers';
