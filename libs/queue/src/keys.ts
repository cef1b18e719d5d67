/**
 * Every Redis key the gateway writes is named here, and each carries a hash tag (`{...}`): on a Redis Cluster the
 * slot is the hash of the tag alone, so what one command, pipeline, MULTI or script touches shares a slot. A queue's
 * keys share its tag (BullMQ's documented Cluster pattern: a bracketed prefix per queue); a task's own keys share
 * the task's tag; single-key counters tag their whole name. Renaming any of these strands what is stored under the
 * old name: queued jobs come back through the rebuild from Postgres (pool-sweeper), views and answers are re-read
 * from Postgres.
 */

/** BullMQ prefix of one queue (a task queue: one of its shards): its keys are `<this>:<queue name>:<suffix>`. */
export function queueKeyPrefix(prefix: string, queueName: string, shard?: number): string {
  return shard === undefined ? `{${prefix}:${queueName}}` : `{${prefix}:${queueName}:${shard}}`;
}

/**
 * BullMQ prefix of one shard of billing's queues (settlements, webhook deliveries): shard 0 keeps the unsharded
 * name `{<prefix>:<queue>}` (a deployment with one shard, as shipped, keeps the keys it always had, and lowering the
 * count back to 1 leaves shard 0's jobs where they are); shard i > 0 is `{<prefix>:<queue>:<i>}`, a slot of its own.
 */
export function billingQueueKeyPrefix(prefix: string, queueName: string, shard = 0): string {
  return queueKeyPrefix(prefix, queueName, shard === 0 ? undefined : shard);
}

/** The Redis task view of a task (read by GET /v1/tasks/<id>). */
export const taskViewKey = (prefix: string, taskId: string): string => `{${prefix}:task:${taskId}}`;

/** An idempotency claim or answer: per API key and Idempotency-Key (hashed). */
export const idempotencyKey = (prefix: string, apiKeyId: string, keyHash: string): string => `{${prefix}:idem:${apiKeyId}:${keyHash}}`;

/**
 * A rate-limiter-flexible counter: the library names it `<keyPrefix>:<key>`, so the key passed to it is tagged
 * (`{id}`) and every counter lands on its own slot, not all on one.
 */
export const limiterKey = (id: string): string => `{${id}}`;

/**
 * One account's unexpired uploads (a sorted set: member `<name> <bytes>`, score = expiry in ms) and, in the same
 * slot, their byte total (`<this>:bytes`): the upload quota (services/api-edge/src/uploads/upload-quota.ts).
 */
export const uploadQuotaKey = (prefix: string, accountId: string): string => `{${prefix}:uploads:${accountId}}`;

/**
 * A task's vendor-callback bookkeeping at the edge (issue 35 item 8), in the task's own slot: `<this>:n` counts its
 * nudges (capped), `<this>:seen:<digest>` marks a token + body already handled (a replay). Both expire.
 */
export const upstreamCallbackKey = (prefix: string, taskId: string): string => `{${prefix}:upcb:${taskId}}`;

/** In the slot of the queue (shard) it guards: lost with that queue's data, so its absence means the queue was lost. */
export const healSentinelKey = (queuePrefix: string): string => `${queuePrefix}:heal`;

/**
 * Since when deliveries of a webhook shard were declined at its backlog cap (a hash: `since`, `last`), in the shard's
 * slot: the billing sweep looks back to it (webhook-deferral.ts).
 */
export const webhookDeferredKey = (queuePrefix: string): string => `${queuePrefix}:webhook-deferred`;

/** Where a pool's orphan sweep stopped (a task id), in the slot of the pool's shard 0. */
export const sweepCursorKey = (queuePrefix: string): string => `${queuePrefix}:sweep-cursor`;

/**
 * The shard of a task in a sharded queue of `shards` shards (a pool; billing's settlements and webhook deliveries): FNV-1a of its id, mod shards. Stable across processes and
 * versions (the sweeps and every producer compute the same shard); changing it is a reshard.
 */
export function shardOf(taskId: string, shards: number): number {
  if (shards <= 1) return 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < taskId.length; i++) {
    h ^= taskId.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shards;
}
