/**
 * Typed errors: one class per error `type` of the gateway (spec section 7), all `instanceof GatewayError`, each
 * with the HTTP `status`, the `type`, the server's `message` and `param` (the field the server named, when it
 * named one).
 */

/** The `type` values of spec section 7. */
export type GatewayErrorType =
  | 'invalid_request_error'
  | 'invalid_duration'
  | 'invalid_resolution'
  | 'unsupported_image_count'
  | 'unsupported_video_count'
  | 'authentication_error'
  | 'payment_required'
  | 'permission_error'
  | 'not_found'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'server_error'
  | 'internal_error'
  | 'bad_gateway'
  | 'service_unavailable';

export interface GatewayErrorInit {
  status: number;
  type: string;
  message: string;
  param?: string;
  /** The `X-Request-Id` of the answer, for a support report. */
  requestId?: string;
  /** Seconds, from `Retry-After`, when the server sent one. */
  retryAfter?: number;
  /** The parsed error body as the server sent it. */
  body?: unknown;
}

/** Any error answer of the gateway. Subclasses name the type; an unknown type stays a plain GatewayError. */
export class GatewayError extends Error {
  readonly status: number;
  readonly type: string;
  readonly param?: string;
  readonly requestId?: string;
  readonly retryAfter?: number;
  readonly body?: unknown;
  constructor(init: GatewayErrorInit) {
    super(init.message);
    this.name = new.target.name;
    this.status = init.status;
    this.type = init.type;
    this.param = init.param;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
    this.body = init.body;
  }
}

/** 400 (422 for conflicting fields): a bad or missing parameter. */
export class InvalidRequestError extends GatewayError {}
/** 400: a duration the model does not take. */
export class InvalidDurationError extends InvalidRequestError {}
/** 400: a resolution the model does not take. */
export class InvalidResolutionError extends InvalidRequestError {}
/** 400: an image count the model does not take. */
export class UnsupportedImageCountError extends InvalidRequestError {}
/** 400: a video count the model does not take. */
export class UnsupportedVideoCountError extends InvalidRequestError {}
/** 401: a bad or unknown key. */
export class AuthenticationError extends GatewayError {}
/** 402: the balance does not cover the request. */
export class PaymentRequiredError extends GatewayError {}
/** 403: the key may not use this model or resource. */
export class PermissionError extends GatewayError {}
/** 404 `not_found_error`: no such task (or not the caller's). */
export class NotFoundError extends GatewayError {}
/** 404 `not_found`: the art suite's spelling of the same. */
export class ArtgenNotFoundError extends NotFoundError {}
/** 429: rate limited (`retryAfter` seconds). */
export class RateLimitError extends GatewayError {}
/** 500 `server_error`. */
export class ServerError extends GatewayError {}
/** 500 `internal_error`: the art suite's spelling of the same. */
export class InternalError extends ServerError {}
/** 502. */
export class BadGatewayError extends GatewayError {}
/** 503: upstream temporarily unavailable. */
export class ServiceUnavailableError extends GatewayError {}

/** The request never got an answer (network failure, DNS, connection reset). */
export class ConnectionError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConnectionError';
  }
}

/** `waitForTask` gave up after `timeoutMs`; the task may still finish (poll it again later). */
export class WaitTimeoutError extends Error {
  constructor(
    readonly taskId: string,
    readonly timeoutMs: number,
    readonly lastTask?: unknown,
  ) {
    super(`task ${taskId} did not finish within ${timeoutMs} ms`);
    this.name = 'WaitTimeoutError';
  }
}

/** `waitForTask` saw the task end `failed`: `error` is the task's `data.error` (cost 0, refunded). */
export class TaskFailedError extends Error {
  constructor(
    readonly taskId: string,
    readonly error: { code?: string; message?: string; type?: string } | undefined,
    readonly task: unknown,
  ) {
    super(`task ${taskId} failed: ${error?.message ?? 'no reason given'}`);
    this.name = 'TaskFailedError';
  }
}

const CLASSES: Record<GatewayErrorType, new (init: GatewayErrorInit) => GatewayError> = {
  invalid_request_error: InvalidRequestError,
  invalid_duration: InvalidDurationError,
  invalid_resolution: InvalidResolutionError,
  unsupported_image_count: UnsupportedImageCountError,
  unsupported_video_count: UnsupportedVideoCountError,
  authentication_error: AuthenticationError,
  payment_required: PaymentRequiredError,
  permission_error: PermissionError,
  not_found: ArtgenNotFoundError,
  not_found_error: NotFoundError,
  rate_limit_error: RateLimitError,
  server_error: ServerError,
  internal_error: InternalError,
  bad_gateway: BadGatewayError,
  service_unavailable: ServiceUnavailableError,
};

/** When the body has no type (a proxy's page, an empty body), the status decides. */
const BY_STATUS: Record<number, GatewayErrorType> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'payment_required',
  403: 'permission_error',
  404: 'not_found_error',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
  500: 'server_error',
  502: 'bad_gateway',
  503: 'service_unavailable',
};

/**
 * The field an error names: the body's `param` when the server sends one, else the first `` `name` `` the message
 * starts with (the gateway's messages name the field that way: "`size` must be one of …").
 */
export function paramOf(message: string, explicit?: unknown): string | undefined {
  if (typeof explicit === 'string' && explicit) return explicit;
  const m = /^`([^`\s]+)`/.exec(message);
  return m ? m[1] : undefined;
}

/** Builds the typed error of one error answer. `body` is the parsed JSON (or undefined when it was not JSON). */
export function errorFromResponse(status: number, body: unknown, headers: { get(name: string): string | null }): GatewayError {
  const e = (body as { error?: { type?: unknown; message?: unknown; param?: unknown } } | undefined)?.error;
  const type = typeof e?.type === 'string' ? e.type : (BY_STATUS[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error'));
  const message = typeof e?.message === 'string' ? e.message : `HTTP ${status}`;
  const retryAfter = parseRetryAfter(headers.get('retry-after'));
  const Ctor = (CLASSES as Record<string, (new (init: GatewayErrorInit) => GatewayError) | undefined>)[type] ?? GatewayError;
  return new Ctor({ status, type, message, param: paramOf(message, e?.param), requestId: headers.get('x-request-id') ?? undefined, retryAfter, body });
}

/** `Retry-After` as seconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - now) / 1000);
}
