/** The `type` values of spec section 7. */
export type ErrorType =
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
