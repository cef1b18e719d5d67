import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { DomainError } from '@gmg/errors';
import type { FailedAuthThrottle } from '../auth/failed-auth.throttle';

export const bearerOf = (req: Request): string | undefined => /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(req.headers.authorization ?? '')?.[1];

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * Whether a presented token is ADMIN_TOKEN. Constant-time on fixed-length digests: neither the token's content nor
 * its length leaks through timing. An empty ADMIN_TOKEN refuses everyone.
 */
export function adminTokenMatcher(adminToken: string): (presented: string | undefined) => boolean {
  const adminDigest = adminToken ? digest(adminToken) : undefined;
  return (presented) => !!presented && !!adminDigest && timingSafeEqual(digest(presented), adminDigest);
}

/**
 * Guesses of the admin token are throttled per client address like failed API keys (docs/rate-limits.md): an
 * address over its failed-auth budget is refused (429) before its token is even compared — the right token too,
 * or a blocked guesser could still tell a hit from a miss — and every wrong token counts against its budget.
 * Returns whether the token matched; `refuse` is how the caller answers a wrong one.
 */
export async function checkAdminToken(
  req: Request,
  matches: (presented: string | undefined) => boolean,
  presented: string | undefined,
  throttle?: FailedAuthThrottle,
): Promise<boolean> {
  const address = req.ip ?? req.socket.remoteAddress ?? '';
  throttle?.assertAllowed(address);
  if (matches(presented)) return true;
  await throttle?.recordFailure(address);
  return false;
}

/** Requires `Authorization: Bearer <ADMIN_TOKEN>` (401 otherwise; 429 for an address over its failed-auth budget). */
export function requireAdminToken(adminToken: string, throttle?: FailedAuthThrottle): RequestHandler {
  const matches = adminTokenMatcher(adminToken);
  return async (req, _res, next) => {
    if (!(await checkAdminToken(req, matches, bearerOf(req), throttle))) {
      throw new DomainError('authentication', 'Admin token required: send `Authorization: Bearer <ADMIN_TOKEN>`');
    }
    next();
  };
}
