import { createHash, randomBytes } from 'node:crypto';
import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { DomainError, idempotencyMismatch } from '@gmg/errors';
import type { Logger } from '@gmg/logger';
import { idempotencyKey, type Redis } from '@gmg/queue';
import { principalOf } from '../http/principal';
import { fullPath } from '../http/request-path';
import { requestFingerprint } from './idempotency-fingerprint';
import { parseReference, rebuildReferenced, referenceFor, type Answer, type TaskAnswers } from './idempotency-reference';
import { captureResponse } from './response-capture';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

export interface IdempotencyOptions {
  /** A ready ioredis client shared by every replica (the claim is a Redis SET NX). */
  redis: Redis;
  /** Redis key prefix, e.g. the QUEUE_PREFIX; keys are `{<prefix>:idem:<apiKeyId>:<sha256(Idempotency-Key)>}` (keys.ts). */
  prefix: string;
  /** How long a finished answer is kept for replay. Default 24 h. */
  ttlSeconds?: number;
  /** How long a claim lives without an answer (a crashed replica frees the key after this). Default 300 s. */
  lockTtlSeconds?: number;
  /** Larger answers are not kept: the key is released instead. Default 1 MiB. */
  maxStoredBytes?: number;
  /**
   * Body parsers to run first when the body is not parsed yet, so the middleware can sit before them
   * (running a parser twice is harmless: a consumed body is skipped).
   */
  bodyParsers?: RequestHandler[];
  logger?: Pick<Logger, 'warn' | 'error'>;
  /**
   * Answers that name a created task (the route says so with answeredWithTask) are stored as a reference to the
   * task and rebuilt from it on replay (idempotency-reference.ts). Absent: every answer is stored whole.
   */
  taskAnswers?: TaskAnswers;
}

/** Headers of the first answer that are not replayed (per-request or transport headers). */
const NOT_REPLAYED = new Set([
  'x-request-id',
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'content-encoding',
  'set-cookie',
  'retry-after',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'vary',
  REPLAYED_HEADER.toLowerCase(),
]);

interface StoredAnswer {
  fp: string;
  status: number;
  headers: Record<string, string | string[]>;
  /** Base64 of the exact bytes sent. */
  body: string;
}

// Value layout: `R:<token>:<fingerprint>` while running; when done, `T:<fingerprint>:<status>:<shape>[@<arg>]:<task id>`
// for an answer rebuilt from its task, else `D:<json StoredAnswer>`.
/** Replace our own claim (and only ours) by the answer, or delete it when ARGV[2] is empty. */
const FINISH_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3])) end
return 1`;

const hasBody = (req: Request): boolean => req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';

const isJson = (req: Request): boolean => /(^application\/json|\+json)(\s*;|$)/i.test(req.headers['content-type'] ?? '');

/**
 * `Idempotency-Key` on every POST under /v1/ (other requests pass through), scoped to the API key of
 * `res.locals.principal` (mount after auth). Same key and same request → the first answer replayed byte for byte
 * with `Idempotent-Replayed: true`, nothing runs again; same key and another request → 422; first still running
 * → 409. Only 2xx answers are kept; any other releases the key so a retry runs again. The handler finds the key
 * and the request's fingerprint with `idempotencyOf(res)` (the database backstop binds both to the task). An answer
 * the route declared with answeredWithTask is kept as a reference to its task when that rebuilds it exactly.
 */
export function createIdempotencyMiddleware(opts: IdempotencyOptions): RequestHandler {
  const ttl = opts.ttlSeconds ?? 86_400;
  const lockTtl = opts.lockTtlSeconds ?? 300;
  const maxStored = opts.maxStoredBytes ?? 1024 * 1024;
  const { redis } = opts;
  const warned = new Set<string>();
  // the parsers as one handler, composed by Express itself (a router is a middleware): a parser's error or rejected
  // promise comes back through the callback, as it would reach the next error handler
  const parseBody = opts.bodyParsers?.length ? Router().use(opts.bodyParsers) : undefined;

  const claimAndRun = async (req: Request, res: Response, next: NextFunction, idemKey: string, path: string): Promise<void> => {
    const principal = principalOf(res);
    const redisKey = idempotencyKey(opts.prefix, principal.keyId, createHash('sha256').update(idemKey).digest('hex'));
    const fp = requestFingerprint(req, path);
    const claim = `R:${randomBytes(16).toString('hex')}:${fp}`;

    // A claim can vanish between SET NX and GET (released after a 5xx, expired): then try to claim again.
    for (let attempt = 0; attempt < 3; attempt++) {
      if ((await redis.set(redisKey, claim, 'EX', lockTtl, 'NX')) === 'OK') {
        setIdempotency(res, { key: idemKey, fingerprint: fp });
        captureAndFinish(res, redisKey, claim, fp);
        next();
        return;
      }
      const current = await redis.get(redisKey);
      if (current === null) continue;
      if (current.startsWith('R:')) {
        if (current.slice(current.lastIndexOf(':') + 1) !== fp) throw idempotencyMismatch();
        throw new DomainError('idempotency_in_progress', `A request with this ${IDEMPOTENCY_HEADER} is still being processed; retry later`, { retryAfter: 1 });
      }
      if (current.startsWith('T:')) {
        const ref = parseReference(current);
        if (ref.fp !== fp) throw idempotencyMismatch();
        replay(res, await rebuildReferenced(opts.taskAnswers, ref, principal.keyId));
        return;
      }
      const stored = JSON.parse(current.slice(2)) as StoredAnswer;
      if (stored.fp !== fp) throw idempotencyMismatch();
      replay(res, { status: stored.status, headers: stored.headers, body: Buffer.from(stored.body, 'base64') });
      return;
    }
    throw new DomainError('idempotency_in_progress', `A request with this ${IDEMPOTENCY_HEADER} is being retried concurrently; retry later`, { retryAfter: 1 });
  };

  const captureAndFinish = (res: Response, redisKey: string, claim: string, fp: string): void =>
    captureResponse(res, maxStored, async ({ status, body, complete }) => {
      // Only answers that started work are kept: a refusal (400, 401, 402, 403, 404, 409, 422, 429) or a 5xx
      // releases the key, so the same request can succeed once its cause is fixed (a top-up after a 402).
      const keepIt = status >= 200 && status < 300 && complete;
      const value = keepIt ? storedValue(res, fp, { status, headers: replayableHeaders(res), body }) : '';
      // Stored before the answer leaves: once the client has it, a retry replays instead of seeing 409.
      await redis
        .eval(FINISH_LUA, 1, redisKey, claim, value, String(ttl))
        .catch((err: unknown) => opts.logger?.error({ err }, 'idempotency: could not store the answer; the claim expires by itself'));
    });

  /** A reference to the answer's task when it rebuilds these exact bytes (~100 bytes), else the whole answer. */
  const storedValue = (res: Response, fp: string, sent: Answer): string =>
    referenceFor(res, opts.taskAnswers, fp, sent) ??
    `D:${JSON.stringify({ fp, status: sent.status, headers: sent.headers, body: sent.body.toString('base64') } satisfies StoredAnswer)}`;

  /** Parses the body when a parser is given; false when the body cannot be fingerprinted (no idempotency then). */
  const bodyReady = async (req: Request, res: Response, path: string): Promise<boolean> => {
    if (req.body !== undefined || !hasBody(req)) return true;
    if (parseBody) {
      // what a body parser passes to next() is an Error (express's http-errors)
      await new Promise<void>((resolve, reject) => parseBody(req, res, (e?: unknown) => (e === undefined ? resolve() : reject(e as Error))));
      return true;
    }
    if (isJson(req)) throw new Error('idempotency middleware reached before the JSON body was parsed: mount it after the parser or pass bodyParsers');
    // A body we cannot fingerprint (e.g. multipart before multer): no idempotency rather than a wrong one.
    if (!warned.has(path)) opts.logger?.warn({ path }, 'idempotency: unparsed non-JSON body, Idempotency-Key ignored');
    warned.add(path);
    return false;
  };

  return async (req, res, next) => {
    const path = fullPath(req);
    if (req.method !== 'POST' || !path.startsWith('/v1/')) return next();
    const idemKey = req.get(IDEMPOTENCY_HEADER);
    if (idemKey === undefined) return next();
    if (idemKey.length === 0 || idemKey.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      throw new DomainError('invalid_request', `${IDEMPOTENCY_HEADER} must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`, { field: IDEMPOTENCY_HEADER });
    }
    if (!(await bodyReady(req, res, path))) return next();
    await claimAndRun(req, res, next, idemKey, path);
  };
}

export interface IdempotencyClaim {
  key: string;
  /** requestFingerprint of the claiming request: a retry with another body is a mismatch, even after Redis lost it. */
  fingerprint: string;
}

const setIdempotency = (res: Response, c: IdempotencyClaim): void => {
  res.locals.idempotency = c;
};

/** The Idempotency-Key this request claimed, if any. */
export const idempotencyOf = (res: Response): IdempotencyClaim | undefined => res.locals.idempotency as IdempotencyClaim | undefined;

function replayableHeaders(res: Response): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(res.getHeaders())) {
    if (value === undefined || NOT_REPLAYED.has(name.toLowerCase()) || name.toLowerCase().startsWith('x-ratelimit-')) continue;
    out[name] = Array.isArray(value) ? value.map(String) : String(value);
  }
  return out;
}

function replay(res: Response, a: Answer): void {
  for (const [name, value] of Object.entries(a.headers)) res.setHeader(name, value);
  res.setHeader(REPLAYED_HEADER, 'true');
  res.status(a.status).end(a.body);
}
