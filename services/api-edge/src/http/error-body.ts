import type { ErrorType } from '@gmg/contracts';

/** The two error dialects of the spec: `{error:{code,message,type}}` (2.6) and the art suite's `{error:{type,message}}`. */
export type ErrorDialect = 'standard' | 'artgen';

export const dialectOf = (path: string): ErrorDialect => (path === '/v1/artgen' || path.startsWith('/v1/artgen/') ? 'artgen' : 'standard');

export interface ErrorBody {
  error: { code?: number; message: string; type: string };
}

/** The art suite names two types differently (spec 7): 404 `not_found`, 500 `internal_error`. */
const ARTGEN_TYPES: Partial<Record<ErrorType, ErrorType>> = { not_found_error: 'not_found', server_error: 'internal_error' };

export function errorBody(dialect: ErrorDialect, status: number, type: ErrorType, message: string): ErrorBody {
  if (dialect === 'artgen') return { error: { type: ARTGEN_TYPES[type] ?? type, message } };
  return { error: { code: status, message, type } };
}
