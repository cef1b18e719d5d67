import type { IncomingHttpHeaders } from 'node:http';
import { DomainError } from '@gmg/errors';

/** `msgproto-version` (spec 4.5), or the vendor's own `anthropic-version` so its clients work unchanged. */
export const VERSION_HEADERS = ['msgproto-version', 'anthropic-version'] as const;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The protocol version of a request: a real calendar date `YYYY-MM-DD`; missing or malformed → 400 naming the header. */
export function parseMessagesVersion(headers: IncomingHttpHeaders): string {
  for (const name of VERSION_HEADERS) {
    const raw = headers[name];
    if (raw === undefined) continue;
    const value = Array.isArray(raw) ? raw[0] : raw.trim();
    const m = DATE.exec(value ?? '');
    const d = m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : undefined;
    if (!m || !d || d.getUTCDate() !== Number(m[3]) || d.getUTCMonth() !== Number(m[2]) - 1) {
      throw new DomainError('invalid_request', `Header \`${name}\` must be a date YYYY-MM-DD (got '${value}')`, { field: name, rule: 'date' });
    }
    return value!;
  }
  throw new DomainError(
    'invalid_request',
    'Header `msgproto-version` is required: the protocol version, a date such as 2023-06-01 (`anthropic-version` is accepted too)',
    {
      field: 'msgproto-version',
      rule: 'required',
    },
  );
}
