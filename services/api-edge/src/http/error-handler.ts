import { randomUUID } from 'node:crypto';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { DomainError, isDependencyUnavailable, isDomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';
import { httpStatusOf } from './error-map';
import { dialectOf, errorBody } from './error-body';
import { fullPath } from './request-path';
import { ERROR_TYPE_LOCAL } from '../observability/submit-metrics';

/** Errors raised by body-parser (express.json) carry a `type`; they are the client's fault. */
interface BodyParserError extends Error {
  type?: string;
  status?: number;
  expose?: boolean;
  limit?: number;
}

/** Maps body-parser failures to domain errors with messages a person can act on. */
function fromBodyParser(err: BodyParserError): DomainError | undefined {
  switch (err.type) {
    case 'entity.parse.failed':
      return new DomainError('invalid_json', 'Request body is not valid JSON');
    case 'entity.too.large':
      return new DomainError('payload_too_large', `Request body is larger than the limit of ${err.limit ?? 'the server'} bytes`);
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new DomainError('unsupported_media_type', err.message);
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
      return new DomainError('invalid_request', err.message);
    default:
      if (err.expose && typeof err.status === 'number' && err.status >= 400 && err.status < 500) {
        return new DomainError('invalid_request', err.message);
      }
      return undefined;
  }
}

/** A dependency down or restarting (Postgres, the pooler, Redis): 503, retryable, never a 500 (the cause is logged). */
function unavailable(err: unknown): DomainError | undefined {
  if (!isDependencyUnavailable(err)) return undefined;
  const e = err as { message?: string; code?: string };
  return new DomainError('service_unavailable', 'A dependency of the gateway is unavailable at the moment; retry shortly', {
    retryAfter: 1,
    cause: `${e.code ?? ''} ${e.message ?? ''}`.trim().slice(0, 200),
  });
}

/**
 * The last middleware: every error leaves in the spec's shape. Unexpected errors become 500 `server_error`
 * with an error id that is also in the log, so a client report can be matched to the stack trace.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    const path = fullPath(req);
    const dialect = dialectOf(path);
    const domain = isDomainError(err) ? err : (fromBodyParser(err as BodyParserError) ?? unavailable(err));
    if (domain) {
      const status = httpStatusOf(domain.code);
      const { retryAfter, allow } = domain.details;
      if (typeof retryAfter === 'number') res.setHeader('Retry-After', String(Math.max(1, Math.ceil(retryAfter))));
      if (typeof allow === 'string') res.setHeader('Allow', allow);
      if (status >= 500) logger.error({ code: domain.code, path, reqId: req.id, err: domain }, domain.message);
      res.locals[ERROR_TYPE_LOCAL] = domain.type;
      res.status(status).json(errorBody(dialect, status, domain.type, domain.message, domain.details));
      return;
    }
    const errorId = `err_${randomUUID()}`;
    logger.error({ errorId, reqId: req.id, method: req.method, path, err }, 'unexpected error');
    res.locals[ERROR_TYPE_LOCAL] = 'server_error';
    res.status(500).json(errorBody(dialect, 500, 'server_error', `Internal server error (error id ${errorId})`));
  };
}

/** Unknown route: 404 in the error shape. */
export const routeNotFound: RequestHandler = (req, _res, next) => {
  next(new DomainError('route_not_found', `No route for ${req.method} ${fullPath(req)}`));
};

/** Wrong method on a known path: 405 with `Allow`. Mount with `router.all(path, methodNotAllowed([...]))` after the real handlers. */
export function methodNotAllowed(methods: readonly string[]): RequestHandler {
  const allow = [...new Set([...methods, ...(methods.includes('GET') ? ['HEAD'] : [])])].join(', ');
  return (req, res, next) => {
    if (req.method === 'OPTIONS') {
      res.setHeader('Allow', allow);
      res.status(204).end();
      return;
    }
    next(new DomainError('method_not_allowed', `Method ${req.method} is not allowed on ${fullPath(req)}; allowed: ${allow}`, { allow }));
  };
}
