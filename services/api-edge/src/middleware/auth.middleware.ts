import type { Request, RequestHandler } from 'express';
import { DomainError } from '@gmg/errors';
import { authenticateThrottled, type FailedAuthThrottle } from '../auth/failed-auth.throttle';
import type { KeyAuthenticator } from '../auth/key-authenticator';
import { setPrincipal } from '../http/principal';
import { fullPath } from '../http/request-path';

/** The messages protocol also takes the key in `x-api-key` (spec 5.2), and so does its clients' model list (spec 4.1 rule 7). */
const X_API_KEY_PATHS = ['/v1/messages', '/v1/models'];

/** The key of a request: `Authorization: Bearer <key>`, or `x-api-key` on the messages endpoint and the model list. */
export function extractApiKey(req: Request): string | undefined {
  const auth = req.headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(auth);
    if (m) return m[1];
  }
  const path = fullPath(req);
  if (X_API_KEY_PATHS.some((p) => path === p || path.startsWith(`${p}/`))) {
    const k = req.headers['x-api-key'];
    if (typeof k === 'string' && k.trim() !== '') return k.trim();
  }
  return undefined;
}

/**
 * 401 `authentication_error` for a missing, malformed, unknown or revoked key; otherwise sets the principal.
 * With a throttle, a client address over its failed-authentication budget gets 429 before any key lookup.
 */
export function authMiddleware(keys: KeyAuthenticator, throttle?: FailedAuthThrottle): RequestHandler {
  const authenticate = authenticateThrottled(keys, throttle);
  return async (req, res, next) => {
    const secret = extractApiKey(req);
    if (!secret) throw new DomainError('authentication', 'Missing API key: send `Authorization: Bearer <API_KEY>`');
    const principal = await authenticate(secret, () => req.ip ?? '');
    if (!principal) throw new DomainError('authentication', 'Invalid API key');
    setPrincipal(res, principal);
    next();
  };
}
