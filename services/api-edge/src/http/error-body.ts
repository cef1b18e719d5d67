import type { ErrorType } from '@gmg/contracts';

/**
 * The error dialects: the spec's `{error:{code,message,type}}` (2.6), the art suite's `{error:{type,message}}`, and
 * on the messages endpoint the same object inside the vendor's envelope `{type:"error",error:{…}}`, which the
 * vendor's clients parse; on the chat-completions endpoint that protocol's `{error:{message,type,param,code}}`
 * (docs/chat.md).
 */
export type ErrorDialect = 'standard' | 'artgen' | 'messages' | 'chat';

export const dialectOf = (path: string): ErrorDialect =>
  path === '/v1/artgen' || path.startsWith('/v1/artgen/')
    ? 'artgen'
    : path === '/v1/messages' || path.startsWith('/v1/messages/')
      ? 'messages'
      : path === CHAT_PATH
        ? 'chat'
        : 'standard';

const CHAT_PATH = '/v1/chat/completions';

export interface ErrorBody {
  type?: 'error';
  error: { code?: number | string | null; message: string; type: string; param?: string | null };
}

/** The art suite names two types differently (spec 7): 404 `not_found`, 500 `internal_error`. */
export const ARTGEN_TYPES: Partial<Record<ErrorType, ErrorType>> = { not_found_error: 'not_found', server_error: 'internal_error' };

/** `details`: the field and rule of a bad request, shown by the chat dialect as `param` and `code`. */
export function errorBody(
  dialect: ErrorDialect,
  status: number,
  type: ErrorType,
  message: string,
  details: { field?: unknown; rule?: unknown } = {},
): ErrorBody {
  if (dialect === 'chat') {
    const named = (v: unknown) => (typeof v === 'string' && v !== '' ? v : null);
    return { error: { message, type, param: named(details.field), code: named(details.rule) } };
  }
  if (dialect === 'artgen') return { error: { type: ARTGEN_TYPES[type] ?? type, message } };
  if (dialect === 'messages') return { type: 'error', error: { code: status, type, message } };
  return { error: { code: status, message, type } };
}
