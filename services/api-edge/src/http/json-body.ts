import express, { type RequestHandler } from 'express';
import { DomainError } from '@gmg/errors';

const JSON_TYPES = ['application/json', '+json'];
/** Fatal: invalid UTF-8 is refused (400), not silently turned into U+FFFD and sent upstream (found by `npm run chaos`). */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Body handling of JSON routes: a body of another media type is 415; then the JSON parser (limit → 413,
 * invalid JSON → 400, both mapped in the error handler). A request without a body gets `{}`, so validation
 * reports the missing fields by name.
 */
export function jsonBody(limitBytes: number): RequestHandler[] {
  const requireJson: RequestHandler = (req, _res, next) => {
    // req.is: null = no body, false = a body of another type. An empty body (Content-Length: 0) is no body,
    // whatever its Content-Type: validation then names the missing fields (400) instead of a 415.
    if (req.headers['content-length'] !== '0' && req.is(JSON_TYPES) === false) {
      throw new DomainError('unsupported_media_type', `Content-Type must be application/json (got '${req.headers['content-type'] ?? ''}')`);
    }
    next();
  };
  const parse = express.json({
    limit: limitBytes, type: JSON_TYPES, strict: true,
    verify: (_req, _res, buf, encoding) => {
      if (!/^utf-?8$/i.test(encoding)) return;
      try {
        UTF8.decode(buf);
      } catch {
        throw new DomainError('invalid_json', 'Request body is not valid UTF-8');
      }
    },
  });
  const defaultBody: RequestHandler = (req, _res, next) => {
    if (req.body === undefined) req.body = {};
    next();
  };
  return [requireJson, parse, defaultBody];
}
