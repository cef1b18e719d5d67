import { createHash } from 'node:crypto';
import type { Request } from 'express';
import { canonicalJson } from '@gmg/contracts';

/** Headers that change what the answer looks like, so they are part of "the same request". */
const SHAPING_HEADERS = ['x-service-response-version', 'msgproto-version'];

/**
 * What makes two requests "the same" for Idempotency-Key: method, full path, the shaping headers and the body
 * (the raw bytes when a parser kept them as `req.rawBody`, else the parsed body as canonical JSON).
 */
export function requestFingerprint(req: Request, path: string): string {
  const h = createHash('sha256');
  h.update(`${req.method}\n${path}\n`);
  for (const name of SHAPING_HEADERS) h.update(`${name}:${req.get(name) ?? ''}\n`);
  const raw = (req as Request & { rawBody?: unknown }).rawBody;
  if (Buffer.isBuffer(raw)) h.update(raw);
  else h.update(canonicalJson(req.body ?? null));
  return h.digest('hex');
}
