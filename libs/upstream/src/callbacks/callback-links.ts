import { createHmac, timingSafeEqual } from 'node:crypto';
import { POOLS, type Pool } from '@gmg/contracts';

/**
 * The edge's route for vendor callbacks (issue 35 item 8): `<UPSTREAM_CALLBACK_BASE_URL>/v1/upstream-callbacks/<token>`.
 * Public (vendors post to it), so the token is the capability: `<task id>.<pool>.<expires, unix s>.<signature>`,
 * the signature HMAC-SHA256 of the first three under UPSTREAM_CALLBACK_SIGNING_KEY (edge and workers share it),
 * base64url. A valid token only nudges the task's next poll (DuePolls.nudge); its body is never read for state.
 */
export const UPSTREAM_CALLBACKS_PATH = '/v1/upstream-callbacks';

/** The shortest signing key accepted (config enforces it too). */
export const MIN_CALLBACK_KEY_LENGTH = 32;

const TASK_ID = /^[A-Za-z0-9_-]{1,64}$/;
const EXPIRES = /^\d{1,12}$/;
const SIGNATURE = /^[A-Za-z0-9_-]{43}$/;

export interface CallbackClaim {
  taskId: string;
  pool: Pool;
  /** Unix seconds. */
  expiresAtS: number;
}

/** Why a token was refused (the log line names it; the answer does not). */
export type CallbackRefusal = 'malformed' | 'signature' | 'expired';

export interface CallbackLinks {
  /** The callback URL of one task, valid until `expiresAtS`. */
  url(taskId: string, pool: Pool, expiresAtS: number): string;
  /** The token's claim, or why it is refused. Timing-safe on the signature. */
  verify(token: string, nowS: number): { ok: true; claim: CallbackClaim } | { ok: false; why: CallbackRefusal };
}

export function createCallbackLinks(opts: { baseUrl: string; signingKey: string }): CallbackLinks {
  if (opts.signingKey.length < MIN_CALLBACK_KEY_LENGTH)
    throw new Error(`the upstream callback signing key must be at least ${MIN_CALLBACK_KEY_LENGTH} characters`);
  const base = opts.baseUrl.replace(/\/+$/, '');
  const sign = (payload: string): string => createHmac('sha256', opts.signingKey).update(payload).digest('base64url');
  return {
    url(taskId, pool, expiresAtS) {
      if (!TASK_ID.test(taskId)) throw new Error('a task id a callback token cannot carry');
      const payload = `${taskId}.${pool}.${Math.floor(expiresAtS)}`;
      return `${base}${UPSTREAM_CALLBACKS_PATH}/${payload}.${sign(payload)}`;
    },
    verify(token, nowS) {
      const parts = token.split('.');
      if (parts.length !== 4) return { ok: false, why: 'malformed' };
      const [taskId, pool, expires, signature] = parts as [string, string, string, string];
      if (!TASK_ID.test(taskId) || !(POOLS as readonly string[]).includes(pool) || !EXPIRES.test(expires) || !SIGNATURE.test(signature)) {
        return { ok: false, why: 'malformed' };
      }
      const want = Buffer.from(sign(`${taskId}.${pool}.${expires}`));
      const got = Buffer.from(signature);
      if (got.length !== want.length || !timingSafeEqual(got, want)) return { ok: false, why: 'signature' };
      // checked after the signature: an expiry is only worth telling apart when the token is ours
      if (Number(expires) <= nowS) return { ok: false, why: 'expired' };
      return { ok: true, claim: { taskId, pool: pool as Pool, expiresAtS: Number(expires) } };
    },
  };
}

/** The token without its signature (what a log line may show). */
export const callbackTokenForLog = (token: string): string => token.split('.').slice(0, 3).join('.').slice(0, 120);
