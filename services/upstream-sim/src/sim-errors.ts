import type { Response } from 'express';
import type { ErrorType } from '@gmg/contracts';

/** The spec error shape (section 2.6). */
export function sendError(res: Response, status: number, type: ErrorType, message: string): void {
  res.status(status).json({ error: { code: status, message, type } });
}

/** The art suite's error shape (spec section 7): `{error: {type, message}}`, no `code`. */
export function sendArtError(res: Response, status: number, type: ErrorType, message: string): void {
  res.status(status).json({ error: { type, message } });
}
