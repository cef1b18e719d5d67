import { createHash } from 'node:crypto';
import type { Request } from 'express';
import { Router } from 'express';
import { QUEUES, type Pool } from '@gmg/contracts';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';
import { upstreamCallbacks } from '@gmg/observability';
import { DuePolls, queueKeyPrefix, shardOf, upstreamCallbackKey, type Redis } from '@gmg/queue';
import { callbackTokenForLog, type CallbackLinks } from '@gmg/upstream';
import { methodNotAllowed } from '../http/error-handler';
import { sendJson } from '../http/send-json';

export interface UpstreamCallbacksDeps {
  links: Pick<CallbackLinks, 'verify'>;
  redis: Redis;
  /** QUEUE_PREFIX and QUEUE_SHARDS: where each pool's due polls are. */
  prefix: string;
  shards: Readonly<Record<Pool, number>>;
  logger: Logger;
  now?: () => Date;
  /** Largest callback body read (and discarded); more is 413. Default 1 MiB. */
  maxBodyBytes?: number;
  /** Nudges one task may get; more callbacks are answered 200 and do nothing. Default 20. */
  maxNudgesPerTask?: number;
}

type Outcome = 'accepted' | 'forged' | 'replayed' | 'late' | 'capped';

/** Bookkeeping lives a day at most (a token's own lifetime bounds it first). */
const MAX_KEEP_S = 86_400;

/** Reads the body only to fingerprint it (a replay is the same token with the same body), bounded. */
async function bodyDigest(req: Request, max: number): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > max) throw new DomainError('payload_too_large', `a callback body is at most ${max} bytes`);
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > max) throw new DomainError('payload_too_large', `a callback body is at most ${max} bytes`);
    hash.update(chunk);
  }
  return hash.digest('base64url');
}

/**
 * `POST /v1/upstream-callbacks/<token>`: a vendor saying a task it runs for us changed (fal and Replicate webhooks,
 * Kling's and Ark's `callback_url`). For vendors, not clients: no API key, the signed token is the capability
 * (createCallbackLinks), so it sits before the /v1 key auth (app.ts). A callback is only a nudge: the body is never
 * read for the task's state; a valid one makes the task's next poll due now (DuePolls.nudge) and the worker's normal
 * poll step reads the vendor and advances the task. So a forged, replayed or late callback changes nothing: forged
 * → 401 and nothing written; replayed (same token, same body) → 200, nothing done; late (the task is not on the poll
 * path: ended) → 200; past the per-task cap → 200, nothing done. A task whose poll is running is nudged at its settle.
 */
export function createUpstreamCallbacksRouter(deps: UpstreamCallbacksDeps): Router {
  const router = Router();
  const now = deps.now ?? (() => new Date());
  const maxBody = deps.maxBodyBytes ?? 1024 * 1024;
  const maxNudges = deps.maxNudgesPerTask ?? 20;
  const polls = new Map<string, DuePolls>();
  const duePollsOf = (pool: Pool, taskId: string): DuePolls => {
    const shard = shardOf(taskId, deps.shards[pool] ?? 1);
    const key = `${pool}:${shard}`;
    let p = polls.get(key);
    // the lease is the workers' business: a nudge never claims
    if (!p) polls.set(key, (p = new DuePolls(deps.redis, queueKeyPrefix(deps.prefix, QUEUES[pool], shard), 30_000)));
    return p;
  };
  const done = (outcome: Outcome, token: string, taskId?: string): void => {
    upstreamCallbacks.inc({ outcome });
    deps.logger.info({ outcome, token: callbackTokenForLog(token), taskId }, 'upstream callback');
  };

  router.post('/:token', async (req, res, next) => {
    const token = String(req.params.token);
    const nowMs = now().getTime();
    const checked = deps.links.verify(token, Math.floor(nowMs / 1000));
    if (!checked.ok) {
      done('forged', token);
      // the body is not read: the connection closes with the answer (Express drains nothing)
      res.setHeader('Connection', 'close');
      next(new DomainError('authentication', 'invalid or expired callback token'));
      return;
    }
    const { taskId, pool, expiresAtS } = checked.claim;
    const digest = await bodyDigest(req, maxBody);
    const ttl = Math.max(1, Math.min(MAX_KEEP_S, expiresAtS - Math.floor(nowMs / 1000)));
    const key = upstreamCallbackKey(deps.prefix, taskId);
    // the task's slot: a replay (same token, same body) writes nothing more; a fresh one counts against the cap
    const fresh = await deps.redis.set(`${key}:seen:${digest}`, '1', 'EX', ttl, 'NX');
    let outcome: Outcome;
    if (fresh !== 'OK') outcome = 'replayed';
    else {
      const r = await deps.redis.multi().incr(`${key}:n`).expire(`${key}:n`, ttl).exec();
      const [err, count] = r?.[0] ?? [new Error('no reply'), 0];
      if (err) throw err;
      if (Number(count) > maxNudges) outcome = 'capped';
      else outcome = (await duePollsOf(pool, taskId).nudge(taskId, nowMs)) === 'absent' ? 'late' : 'accepted';
    }
    done(outcome, token, taskId);
    sendJson(res, 200, { received: true });
  });
  router.all('/:token', methodNotAllowed(['POST']));
  return router;
}
