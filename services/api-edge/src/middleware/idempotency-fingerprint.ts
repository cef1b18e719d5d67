import { createHash } from 'node:crypto';
import type { Request } from 'express';

/** JSON with object keys sorted at every level: `{"b":1,"a":2}` and `{"a":2, "b":1}` are the same request. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

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
