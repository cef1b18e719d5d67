import type { ContractViolation, ErrorType } from '@gmg/contracts';

/**
 * Stable internal error codes. Each maps to one spec `type` here and to one HTTP status in api-edge
 * (services/api-edge/src/http/error-map.ts). Domain code never speaks HTTP.
 */
export const ERROR_CODES = {
  invalid_request: 'invalid_request_error',
  invalid_json: 'invalid_request_error',
  conflicting_fields: 'invalid_request_error',
  invalid_duration: 'invalid_duration',
  invalid_resolution: 'invalid_resolution',
  unsupported_image_count: 'unsupported_image_count',
  unsupported_video_count: 'unsupported_video_count',
  payload_too_large: 'invalid_request_error',
  unsupported_media_type: 'invalid_request_error',
  route_not_found: 'not_found_error',
  method_not_allowed: 'invalid_request_error',
  authentication: 'authentication_error',
  permission: 'permission_error',
  payment_required: 'payment_required',
  task_not_found: 'not_found_error',
  artgen_not_found: 'not_found',
  not_found: 'not_found_error',
  rate_limited: 'rate_limit_error',
  idempotency_in_progress: 'invalid_request_error',
  idempotency_mismatch: 'invalid_request_error',
  idempotency_task_gone: 'invalid_request_error',
  conflict: 'invalid_request_error',
  server_error: 'server_error',
  bad_gateway: 'bad_gateway',
  service_unavailable: 'service_unavailable',
} as const satisfies Record<string, ErrorType>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface DomainErrorDetails {
  field?: string;
  rule?: string;
  /** Seconds, for rate limits. */
  retryAfter?: number;
  /** Anything else safe to show. */
  [k: string]: unknown;
}

/** A failure the client caused or must know about. Carries a stable code and a spec type, no HTTP. */
export class DomainError extends Error {
  readonly type: ErrorType;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: DomainErrorDetails = {},
  ) {
    super(message);
    this.name = 'DomainError';
    this.type = ERROR_CODES[code];
  }
}

export const isDomainError = (e: unknown): e is DomainError => e instanceof DomainError;

/** The rule named in every 413 of a JSON route (the route's cap, or the cap of the model a body names). */
const BODY_CAP_RULE = 'max_body_bytes';

const MIB = 1024 * 1024;
const formatBytes = (n: number): string => (n >= MIB ? `${(n / MIB).toFixed(n % MIB === 0 ? 0 : 1)} MiB` : `${Math.ceil(n / 1024)} KiB`);

/** A body over a cap, naming the rule; `what` says which cap (the route's, or the model's). */
export function bodyTooLarge(limitBytes: number, what: string): DomainError {
  return new DomainError(
    'payload_too_large',
    `Request body is larger than ${limitBytes} bytes (${formatBytes(limitBytes)}), the limit of ${what} (rule ${BODY_CAP_RULE}); send large images as URLs (POST /v1/uploads/images gives one)`,
    { field: '', rule: BODY_CAP_RULE, limit: limitBytes },
  );
}

/** An Idempotency-Key used before with another request (the middleware's Redis record, or the database backstop). */
export function idempotencyMismatch(): DomainError {
  return new DomainError('idempotency_mismatch', 'This Idempotency-Key was already used with a different request; use a new key for a new request', {
    field: 'Idempotency-Key',
  });
}

const VIOLATION_CODES: Partial<Record<ErrorType, ErrorCode>> = {
  invalid_duration: 'invalid_duration',
  invalid_resolution: 'invalid_resolution',
  unsupported_image_count: 'unsupported_image_count',
  unsupported_video_count: 'unsupported_video_count',
};

/** A contract violation (from @gmg/contracts validation) as a DomainError. */
export function violationError(v: ContractViolation): DomainError {
  const code: ErrorCode = v.status === 422 ? 'conflicting_fields' : (VIOLATION_CODES[v.type] ?? 'invalid_request');
  return new DomainError(code, v.message, { field: v.field, rule: v.rule });
}

/** Upstream failures: retryable ones (timeouts, 5xx, 429) may be retried or failed over; final ones fail the task. */
export class UpstreamError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    /** 'moderation' | 'quota' | 'timeout' | 'bad_request' | 'server' | 'network' */
    readonly kind: string = retryable ? 'server' : 'bad_request',
    /** The vendor's `Retry-After` (429, 503), in ms: a retry on the same channel waits at least this long. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }
}

/** Socket errors of a connection to a dependency (Postgres, PgBouncer, Redis) that is down, restarting or unreachable. */
const UNAVAILABLE_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** SQLSTATEs meaning "the database is not reachable now" (PgBouncer answers 08P01 when its server connection died). */
const UNAVAILABLE_SQLSTATE = /^(08|57P0[123]$|53300$)/;
const UNAVAILABLE_MESSAGES = [
  'Connection terminated', // pg: the server or the pooler closed the session
  'timeout exceeded when trying to connect', // pg pool: PG_CONNECTION_TIMEOUT_MS
  'Client has encountered a connection error', // pg: a client that lost its connection
  'Connection is closed', // ioredis
  'Command timed out', // ioredis commandTimeout (REDIS_COMMAND_TIMEOUT_MS): a Redis that stopped answering
  'Reached the max retries per request limit', // ioredis MaxRetriesPerRequestError
];

/**
 * True when `err` (or the driver error it wraps, as TypeORM's QueryFailedError does) says a dependency is down or
 * restarting — not that the request or the code is wrong. The edge answers these 503 with Retry-After (retryable;
 * nothing was accepted), never a 500: found by `CHAOS_PGBOUNCER=1 npm run chaos` (a submit during a PgBouncer restart
 * got `connect ECONNREFUSED` as a 500).
 */
export function isDependencyUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 3) return false;
  const e = err as { code?: unknown; message?: unknown; driverError?: unknown; cause?: unknown; name?: unknown };
  if (typeof e.code === 'string' && (UNAVAILABLE_SOCKET_CODES.has(e.code) || UNAVAILABLE_SQLSTATE.test(e.code))) return true;
  if (e.name === 'MaxRetriesPerRequestError') return true;
  if (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.some((m) => (e.message as string).includes(m))) return true;
  return isDependencyUnavailable(e.driverError, depth + 1) || isDependencyUnavailable(e.cause, depth + 1);
}
