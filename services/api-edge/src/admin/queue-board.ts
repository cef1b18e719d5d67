import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { RequestHandler } from 'express';
import { POOLS, QUEUES, type ShardedQueue } from '@gmg/contracts';
import { createBillingQueueShards, createTaskQueueShards, createWebhookQueueShards, type Redis } from '@gmg/queue';

export interface QueueBoardDeps {
  /** The app's Redis connection (shared: the dashboard's queue handles open no connection of their own). */
  redis: Redis;
  /** BullMQ key prefix (QUEUE_PREFIX). */
  prefix: string;
  /** Queue shards (QUEUE_SHARDS); shard i > 0 is listed as `s<i>.<queue>`. Default 1 each. */
  shards?: Readonly<Partial<Record<ShardedQueue, number>>>;
  /** ADMIN_QUEUES_WRITE: allow retry, promote, remove, clean, pause (default false: read-only). */
  allowWrites: boolean;
}

/**
 * bull-board over the four pool queues and billing's two (settlements, webhook deliveries), each shard, its links
 * and API under `basePath`.
 * Loaded by queue-dashboard.ts on the dashboard's first authorized request; the token check is not here.
 */
const DESCRIPTIONS: Record<string, string> = { [QUEUES.billing]: 'settlements (capture / release)', [QUEUES.webhook]: 'webhook deliveries' };

export function createQueueBoard(deps: QueueBoardDeps, basePath: string): RequestHandler {
  const shards = POOLS.flatMap((pool) => createTaskQueueShards(pool, deps.redis, deps.prefix, deps.shards?.[pool] ?? 1).map((q, i) => ({ q, i })));
  // the webhook queues are only read and managed here (a retry keeps the job's own options)
  const money = [
    ...createBillingQueueShards(deps.redis, deps.prefix, deps.shards?.billing ?? 1).map((q, i) => ({ q, i })),
    ...createWebhookQueueShards(deps.redis, deps.prefix, { attempts: 1, backoffMs: 1000 }, deps.shards?.webhook ?? 1).map((q, i) => ({ q, i })),
  ];
  const queues = [...shards, ...money];
  const serverAdapter = new ExpressAdapter().setBasePath(basePath);
  createBullBoard({
    queues: queues.map(
      ({ q, i }) =>
        new BullMQAdapter(q, {
          ...(i > 0 ? { prefix: `s${i}.` } : {}),
          readOnlyMode: !deps.allowWrites,
          allowRetries: deps.allowWrites,
          description: DESCRIPTIONS[q.name] ?? 'pool tasks',
        }),
    ),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'gmg queues' } },
  });
  return serverAdapter.getRouter() as RequestHandler;
}
