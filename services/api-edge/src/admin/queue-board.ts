import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { RequestHandler } from 'express';
import { POOLS, QUEUES, type Pool } from '@gmg/contracts';
import { createBillingQueue, createTaskQueueShards, type Redis } from '@gmg/queue';

export interface QueueBoardDeps {
  /** The app's Redis connection (shared: the dashboard's queue handles open no connection of their own). */
  redis: Redis;
  /** BullMQ key prefix (QUEUE_PREFIX). */
  prefix: string;
  /** Queue shards per pool (QUEUE_SHARDS); shard i > 0 is listed as `s<i>.<queue>`. Default 1 each. */
  shards?: Readonly<Partial<Record<Pool, number>>>;
  /** ADMIN_QUEUES_WRITE: allow retry, promote, remove, clean, pause (default false: read-only). */
  allowWrites: boolean;
}

/**
 * bull-board over the four pool queues (each shard) and the billing queue, its links and API under `basePath`.
 * Loaded by queue-dashboard.ts on the dashboard's first authorized request; the token check is not here.
 */
export function createQueueBoard(deps: QueueBoardDeps, basePath: string): RequestHandler {
  const shards = POOLS.flatMap((pool) => createTaskQueueShards(pool, deps.redis, deps.prefix, deps.shards?.[pool] ?? 1).map((q, i) => ({ q, i })));
  const queues = [...shards, { q: createBillingQueue(deps.redis, deps.prefix), i: 0 }];
  const serverAdapter = new ExpressAdapter().setBasePath(basePath);
  createBullBoard({
    queues: queues.map(
      ({ q, i }) =>
        new BullMQAdapter(q, {
          ...(i > 0 ? { prefix: `s${i}.` } : {}),
          readOnlyMode: !deps.allowWrites,
          allowRetries: deps.allowWrites,
          description: q.name === QUEUES.billing ? 'settlements (capture / release)' : 'pool tasks',
        }),
    ),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'gmg queues' } },
  });
  return serverAdapter.getRouter() as RequestHandler;
}
