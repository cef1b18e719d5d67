import { DomainError } from '@gmg/errors';

/** The response version of shape-B models when the client does not pick one (the date the spec shows). */
export const DEFAULT_RESPONSE_VERSION = '2026-07-27';
export const RESPONSE_VERSION_HEADER = 'X-Service-Response-Version';

/**
 * `X-Service-Response-Version` (spec 4.6.3, 9): a calendar date `YYYY-MM-DD`. Every date selects the one
 * response layout that exists so far (shape B); a later layout would be chosen here by date. Absent → default.
 */
export function parseResponseVersion(raw: string | undefined): string {
  if (raw === undefined || raw.trim() === '') return DEFAULT_RESPONSE_VERSION;
  const v = raw.trim();
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  const d = m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : undefined;
  if (!m || !d || d.getUTCFullYear() !== Number(m[1]) || d.getUTCMonth() !== Number(m[2]) - 1 || d.getUTCDate() !== Number(m[3])) {
    throw new DomainError(
      'invalid_request',
      `Header ${RESPONSE_VERSION_HEADER} must be a date YYYY-MM-DD (for example ${DEFAULT_RESPONSE_VERSION}); got '${v}'`,
      {
        field: RESPONSE_VERSION_HEADER,
      },
    );
  }
  return v;
}
