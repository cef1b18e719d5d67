import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { DomainError } from '@gmg/errors';

export const bearerOf = (req: Request): string | undefined => /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(req.headers.authorization ?? '')?.[1];

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * Requires `Authorization: Bearer <ADMIN_TOKEN>` (401 otherwise). Constant-time on fixed-length digests: neither
 * the token's content nor its length leaks through timing. An empty token refuses everyone.
 */
export function requireAdminToken(adminToken: string): RequestHandler {
  const adminDigest = adminToken ? digest(adminToken) : undefined;
  return (req, _res, next) => {
    const token = bearerOf(req);
    if (!token || !adminDigest || !timingSafeEqual(digest(token), adminDigest)) {
      throw new DomainError('authentication', 'Admin token required: send `Authorization: Bearer <ADMIN_TOKEN>`');
    }
    next();
  };
}
