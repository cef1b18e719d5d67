import type { ErrorType } from '@gmg/contracts';

/**
 * The error dialects: the spec's `{error:{code,message,type}}` (2.6), the art suite's `{error:{type,message}}`, and
 * on the messages endpoint the same object inside the vendor's envelope `{type:"error",error:{…}}`, which the
 * vendor's clients parse.
 */
export type ErrorDialect = 'standard' | 'artgen' | 'messages';

export const dialectOf = (path: string): ErrorDialect =>
  path === '/v1/artgen' || path.startsWith('/v1/artgen/') ? 'artgen' : path === '/v1/messages' ? 'messages' : 'standard';

export interface ErrorBody {
  type?: 'error';
  error: { code?: number; message: string; type: string };
}

/** The art suite names two types differently (spec 7): 404 `not_found`, 500 `internal_error`. */
export const ARTGEN_TYPES: Partial<Record<ErrorType, ErrorType>> = { not_found_error: 'not_found', server_error: 'internal_error' };

export function errorBody(dialect: ErrorDialect, status: number, type: ErrorType, message: string): ErrorBody {
  if (dialect === 'artgen') return { error: { type: ARTGEN_TYPES[type] ?? type, message } };
  if (dialect === 'messages') return { type: 'error', error: { code: status, type, message } };
  return { error: { code: status, message, type } };
}
