export type Row = Record<string, unknown>;

/**
 * TypeORM's postgres `query()` returns `[rows, rowCount]` for UPDATE/DELETE (even with RETURNING) and `rows`
 * otherwise. This gives the rows in both cases.
 */
export function rowsOf(result: unknown): Row[] {
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') {
    return result[0] as Row[];
  }
  return result as Row[];
}
