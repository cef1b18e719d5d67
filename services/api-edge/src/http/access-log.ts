import type { RequestHandler } from 'express';
import { randomHex } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { routeOf } from '@gmg/observability';

declare module 'node:http' {
  interface IncomingMessage {
    /** `req_<32 hex>`, also sent as X-Request-Id (set by `accessLog`). */
    id: string;
    /** `performance.now()` when the request arrived (set by `accessLog`; chat answers time themselves from it). */
    receivedAt?: number;
  }
}

/**
 * The request id (X-Request-Id on every response, `req.id` for the handlers) and one access log line per request:
 * `{reqId, method, route, status, ms}` (the route pattern, never the raw path, whose upload names are capabilities;
 * no headers, so nothing to redact), at `error` for a 5xx and `info` otherwise; a request the client abandoned
 * before the response was finished is logged with `aborted: true`. Requests for which `quiet(path)` is true get an
 * id but no log line (health probes).
 *
 * This replaces pino-http, which serialised and redacted every request's and response's full headers: about
 * 17 % of the edge's busy time under the poll load (docs/benchmarks.md, issue 13). The line goes through a child
 * logger without the redaction pass (~7 µs of a ~10 µs line): it only ever holds the five fields above, none of
 * them a secret, so there is nothing to redact.
 */
export function accessLog(logger: Logger, quiet: (path: string) => boolean): RequestHandler {
  const log = logger.child({}, { redact: [] });
  return (req, res, next) => {
    req.receivedAt = performance.now();
    // 32 hex digits: the time (ms, 12 digits: ids sort by time, so the tasks' request_id index grows at its right
    // edge) and 80 random bits from the id pool (libs/db ids.ts)
    const id = `req_${Date.now().toString(16).padStart(12, '0')}${randomHex(10)}`;
    req.id = id;
    res.setHeader('X-Request-Id', id);
    if (quiet(req.path)) return next();
    const start = process.hrtime.bigint();
    // 'close' follows every response: after 'finish' when it was sent, alone when the client went away first
    res.once('close', () => {
      const status = res.statusCode;
      const line = { reqId: id, method: req.method, route: routeOf(req), status, ms: Math.round(Number(process.hrtime.bigint() - start) / 1e4) / 100 };
      if (!res.writableFinished) log.warn({ ...line, aborted: true }, 'request aborted');
      else if (status >= 500) log.error(line, 'request failed');
      else log.info(line, 'request completed');
    });
    next();
  };
}
