import { timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

/** Lets a request through only with `Authorization: Bearer <apiKey>`; `deny` answers in the caller's error shape. */
export function bearerGuard(apiKey: string, deny: (res: Response) => void) {
  const expected = Buffer.from(apiKey);
  return (req: Request, res: Response, next: NextFunction) => {
    const m = /^Bearer\s+(.+)$/i.exec(req.header('authorization') ?? '');
    const given = Buffer.from(m?.[1]?.trim() ?? '');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return next();
    deny(res);
  };
}
