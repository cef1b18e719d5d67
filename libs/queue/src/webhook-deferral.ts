import type { Queue } from 'bullmq';
import { webhookDeferredKey } from './keys';

/**
 * The mark a webhook delivery declined at its shard's backlog cap leaves (BACKLOG_CAPS.webhook): a hash in the
 * shard's slot with `since` (the first decline not yet swept) and `last` (the latest). The billing sweep reads it and
 * looks back to `since` instead of its usual 10 minutes, so a delivery deferred for longer is still sent once there
 * is room; a walk that got through its whole window clears the mark if no delivery was declined since it was read.
 * Lost with the shard's data, as the jobs are: the rebuild after such a loss walks the whole max age anyway.
 */
export interface WebhookDeferral {
  queue: Queue;
  since: number;
  last: string;
}

const keyOf = (queue: Queue): string => webhookDeferredKey(queue.opts.prefix ?? 'bull');

/** The two scripts, defined once per client (BullMQ's client interface: defineCommand, then runCommand). */
const SCRIPTS = {
  gmgWebhookDeferredMark: `redis.call('HSETNX', KEYS[1], 'since', ARGV[1]) redis.call('HSET', KEYS[1], 'last', ARGV[1]) return 1`,
  gmgWebhookDeferredClear: `if redis.call('HGET', KEYS[1], 'last') == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`,
} as const;
const defined = new WeakSet<object>();

async function run(queue: Queue, script: keyof typeof SCRIPTS, arg: string): Promise<unknown> {
  const client = await queue.client;
  if (!defined.has(client)) {
    for (const [name, lua] of Object.entries(SCRIPTS)) client.defineCommand(name, { numberOfKeys: 1, lua });
    defined.add(client);
  }
  return client.runCommand(script, [keyOf(queue), arg]);
}

/** Marks the queue's shard: a delivery was declined at its cap now. */
export async function markWebhookDeferred(queue: Queue, now = Date.now()): Promise<void> {
  await run(queue, 'gmgWebhookDeferredMark', String(now));
}

/** The marks of the shards that have one. */
export async function webhookDeferrals(queues: readonly Queue[]): Promise<WebhookDeferral[]> {
  const marks = await Promise.all(
    queues.map(async (queue) => {
      const [since, last] = await (await queue.client).hmget(keyOf(queue), 'since', 'last');
      return since && last ? { queue, since: Number(since), last } : undefined;
    }),
  );
  return marks.filter((m): m is WebhookDeferral => m !== undefined);
}

/** Clears a mark read before a complete walk, unless a delivery was declined since (its `last` moved): true if cleared. */
export async function clearWebhookDeferral(m: WebhookDeferral): Promise<boolean> {
  return Number(await run(m.queue, 'gmgWebhookDeferredClear', m.last)) === 1;
}
