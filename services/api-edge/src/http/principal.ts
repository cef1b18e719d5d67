import type { Response } from 'express';
import type { AuthPrincipal } from '@gmg/db';

/**
 * Where the auth middleware leaves the caller: `res.locals.principal`. Middlewares mounted after auth
 * (rate limit, idempotency, management) read it with `principalOf(res)`.
 */
export const PRINCIPAL_LOCAL = 'principal';

export function setPrincipal(res: Response, p: AuthPrincipal): void {
  res.locals[PRINCIPAL_LOCAL] = p;
}

/** The authenticated caller; throws when a route forgot the auth middleware (a programming error → 500). */
export function principalOf(res: Response): AuthPrincipal {
  const p = res.locals[PRINCIPAL_LOCAL] as AuthPrincipal | undefined;
  if (!p) throw new Error('route reached without authentication: mount the auth middleware before it');
  return p;
}
