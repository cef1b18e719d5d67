import { UpstreamError } from '@gmg/errors';

/** Messages and types an upstream uses for content-moderation refusals (final: another channel would refuse too). */
const MODERATION_TYPE = /moderation|content_policy|content_filter|nsfw|safety/i;
const MODERATION_MESSAGE = /moderation|banned prompt|content polic|nsfw|sensitive content|safety (system|filter|check)/i;

export function isModerationFailure(type: string | undefined, message: string | undefined): boolean {
  return (type !== undefined && MODERATION_TYPE.test(type)) || (message !== undefined && MODERATION_MESSAGE.test(message));
}

/** Network error codes (no HTTP answer at all): the channel may be down, another one may work. */
const TIMEOUT_CODES = new Set(['ECONNABORTED', 'ETIMEDOUT', 'ESOCKETTIMEDOUT', 'ERR_CANCELED', 'UND_ERR_CONNECT_TIMEOUT']);

export interface HttpFailure {
  /** HTTP status, when the upstream answered. */
  status?: number;
  /** Node/axios error code when it did not (ECONNREFUSED, ECONNABORTED…). */
  code?: string;
  /** The spec error object of the body, when present. */
  errorType?: string;
  /** The error's finer code when the vendor sends one beside its type (OpenAI's `moderation_blocked`). */
  errorCode?: string;
  errorMessage?: string;
  /** The answer's Retry-After, in ms (429 and 503 carry it on to the retry). */
  retryAfterMs?: number;
}

/**
 * The retry policy for upstream HTTP failures, in one place:
 * - no answer (connection refused/reset, DNS) → retryable `network`; timeouts → retryable `timeout`;
 * - 429 → retryable `quota`; 5xx and 408 → retryable `server`/`timeout`;
 * - 401, 402, 403 → retryable `channel`: the upstream refuses OUR channel credentials or balance, not the request,
 *   so failing over to another channel is right (and the circuit breaker takes the broken channel out);
 * - 404 → final `not_found` (an upstream task it no longer knows cannot come back);
 * - a moderation refusal → final `moderation`; any other 4xx → final `bad_request`.
 * `describe` names the call for the message (never the api key).
 */
export function classifyHttpFailure(f: HttpFailure, describe: string): UpstreamError {
  const detail = f.errorMessage ? `: ${truncate(f.errorMessage, 300)}` : '';
  if (f.status === undefined) {
    const code = f.code ?? 'unknown';
    if (TIMEOUT_CODES.has(code)) return new UpstreamError(`${describe} timed out`, true, undefined, 'timeout');
    return new UpstreamError(`${describe} failed: network error ${code}`, true, undefined, 'network');
  }
  const s = f.status;
  const msg = `${describe} answered HTTP ${s}${f.errorType ? ` ${f.errorType}` : ''}${f.errorCode ? ` (${f.errorCode})` : ''}${detail}`;
  if (isModerationFailure(f.errorType, f.errorMessage) || isModerationFailure(f.errorCode, undefined)) return new UpstreamError(msg, false, s, 'moderation');
  if (s === 429) return new UpstreamError(msg, true, s, 'quota', f.retryAfterMs);
  if (s === 408) return new UpstreamError(msg, true, s, 'timeout');
  if (s >= 500) return new UpstreamError(msg, true, s, 'server', f.retryAfterMs);
  if (s === 401 || s === 402 || s === 403) return new UpstreamError(msg, true, s, 'channel');
  if (s === 404) return new UpstreamError(msg, false, s, 'not_found');
  return new UpstreamError(msg, false, s, 'bad_request');
}

export function truncate(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max)}…`;
}

/** Removes a secret from a text that is about to become an error message or a log line. */
export function scrubSecret(text: string, secret: string): string {
  return secret.length >= 4 ? text.split(secret).join('[redacted]') : text;
}
