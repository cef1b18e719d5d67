import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import express, { type RequestHandler } from 'express';
import { DomainError, bodyTooLarge } from '@gmg/errors';
import { lingerThenClose } from './body-linger';
import { bodyBudgetGate, type BodyBudget } from './body-budget';
import { assertJsonDepth } from './json-depth';
import { fullPath } from './request-path';

const JSON_TYPES = ['application/json', '+json'];

/** How many bytes the JSON body of a request had (set by the parser; undefined before parsing or without a body). */
const bodyBytes = new WeakMap<IncomingMessage, number>();
export const bodyBytesOf = (req: IncomingMessage): number | undefined => bodyBytes.get(req);

/**
 * Body handling of JSON routes: a body of another media type is 415; a body above the route's cap is 413 — from
 * its Content-Length before a byte of it is read, or as soon as a chunked body crosses the cap (the parser stops
 * there); then the JSON parser (invalid JSON, invalid UTF-8 or nesting deeper than MAX_JSON_DEPTH → 400). A request without a body gets `{}`, so validation reports
 * the missing fields by name.
 *
 * `maxBytes`: the ceiling of every JSON route (MAX_BODY_BYTES). `capOf(path)`: the route's own cap (the largest
 * body any model contract served there accepts), when smaller. `budget`: the large bodies' budget (http/body-budget.ts)
 * a large body waits for before it is read. `opts.bytes`: `req.body` is the body's bytes, checked for nesting but not
 * parsed (the messages routes relay them upstream untouched and parse them themselves).
 */
export function jsonBody(
  maxBytes: number,
  capOf: (path: string) => number | undefined = () => undefined,
  budget?: BodyBudget,
  opts: { bytes?: boolean } = {},
): RequestHandler[] {
  const verify = (req: IncomingMessage, _res: unknown, buf: Buffer, encoding: string): void => {
    bodyBytes.set(req, buf.length);
    assertJsonDepth(buf);
    // invalid UTF-8 is refused (400), not silently turned into U+FFFD and sent upstream (found by `npm run chaos`);
    // isUtf8 validates in place, without decoding the body into a string that is thrown away. (The bytes mode
    // decodes nothing: its `encoding` is not utf-8, and the bytes go on as they came.)
    if (/^utf-?8$/i.test(encoding) && !isUtf8(buf)) throw new DomainError('invalid_json', 'Request body is not valid UTF-8');
  };
  const parsers = new Map<number, RequestHandler>();
  const parserFor = (limit: number): RequestHandler => {
    let p = parsers.get(limit);
    if (!p) {
      p = opts.bytes ? express.raw({ limit, type: JSON_TYPES, verify }) : express.json({ limit, type: JSON_TYPES, strict: true, verify });
      parsers.set(limit, p);
    }
    return p;
  };
  const limitOf = (path: string): number => Math.min(maxBytes, capOf(path) ?? maxBytes);

  const requireJson: RequestHandler = (req, _res, next) => {
    // req.is: null = no body, false = a body of another type. An empty body (Content-Length: 0) is no body,
    // whatever its Content-Type: validation then names the missing fields (400) instead of a 415.
    if (req.headers['content-length'] !== '0' && req.is(JSON_TYPES) === false) {
      throw new DomainError('unsupported_media_type', `Content-Type must be application/json (got '${req.headers['content-type'] ?? ''}')`);
    }
    next();
  };
  const parse: RequestHandler = (req, res, next) => {
    if (req.body !== undefined) return next(); // parsed already (the idempotency guard parses before the route)
    const limit = limitOf(fullPath(req));
    const tooLarge = () => {
      lingerThenClose(req, res);
      next(bodyTooLarge(limit, `POST ${fullPath(req)}`));
    };
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) return tooLarge();
    // The parser stops buffering at the limit but answers only once it has read (and dropped) the whole body; this
    // count answers as soon as a body without a Content-Length crosses the limit, and the parser's late answer is dropped.
    let settled = false;
    let seen = 0;
    const count = (chunk: Buffer): void => {
      seen += chunk.length;
      if (seen <= limit || settled) return;
      settled = true;
      req.off('data', count);
      tooLarge();
    };
    parserFor(limit)(req, res, (err?: unknown) => {
      req.off('data', count);
      if (settled) return;
      settled = true;
      if ((err as { type?: string } | undefined)?.type === 'entity.too.large') return tooLarge();
      next(err);
    });
    // attached after the parser's own listener, so no chunk can flow before the parser reads it
    if (!settled) req.on('data', count);
  };
  const defaultBody: RequestHandler = (req, _res, next) => {
    if (req.body === undefined) req.body = {};
    next();
  };
  return budget ? [requireJson, bodyBudgetGate(budget, (req) => limitOf(fullPath(req))), parse, defaultBody] : [requireJson, parse, defaultBody];
}
