import type { ErrorCode } from '@gmg/errors';

/**
 * The one table from domain error codes to HTTP statuses (spec section 7). `satisfies Record<ErrorCode, …>`
 * makes a new code without a status a compile error.
 */
export const HTTP_STATUS_OF = {
  invalid_request: 400,
  invalid_json: 400,
  conflicting_fields: 422,
  invalid_duration: 400,
  invalid_resolution: 400,
  unsupported_image_count: 400,
  unsupported_video_count: 400,
  payload_too_large: 413,
  unsupported_media_type: 415,
  route_not_found: 404,
  method_not_allowed: 405,
  authentication: 401,
  permission: 403,
  payment_required: 402,
  task_not_found: 404,
  artgen_not_found: 404,
  not_found: 404,
  rate_limited: 429,
  idempotency_in_progress: 409,
  idempotency_mismatch: 422,
  idempotency_task_gone: 422,
  conflict: 409,
  server_error: 500,
  bad_gateway: 502,
  service_unavailable: 503,
} as const satisfies Record<ErrorCode, number>;

export const httpStatusOf = (code: ErrorCode): number => HTTP_STATUS_OF[code] ?? 500;
