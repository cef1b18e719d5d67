import { UpstreamError } from '@gmg/errors';
import type { ChannelTarget } from '../../adapter';
import { classifyHttpFailure, scrubSecret, truncate } from '../../upstream-failure';
import { retryAfterMs, type UpstreamAnswer } from '../../upstream-http';
import { callVendor, type VendorErrorReader, type VendorOperation } from '../../vendor-call';
import { type Json, isObj } from '../../json-value';

/**
 * Kling answers `{code, message, request_id, data}`; `code` 0 is success, anything else is one of its documented
 * error codes (commonInfo, "Error Codes"), each with its own HTTP status. The code, not the HTTP status, says
 * what happened: arrears (1101) come as HTTP 429 but are the channel's account, not a rate limit.
 */

const codeOf = (body: unknown): number | undefined => (isObj(body) && typeof body.code === 'number' ? body.code : undefined);

/** Our failure kind for a Kling code; undefined: not a documented code (the HTTP status decides). */
function kindOf(code: number): { kind: string; retryable: boolean } | undefined {
  if (code >= 1000 && code <= 1004) return { kind: 'channel', retryable: true }; // authentication: this channel's key
  if (code >= 1100 && code <= 1103) return { kind: 'channel', retryable: true }; // account: arrears, resource pack, access
  if (code === 1300 || code === 1301) return { kind: 'moderation', retryable: false }; // platform / content security policy
  if (code === 1302 || code === 1303) return { kind: 'quota', retryable: true }; // rate or concurrency
  if (code === 1304) return { kind: 'channel', retryable: true }; // IP allow-list of this account
  if (code === 1203) return { kind: 'not_found', retryable: false }; // model or task unknown
  if (code >= 1200 && code <= 1202) return { kind: 'bad_request', retryable: false };
  if (code >= 5000 && code <= 5002) return { kind: 'server', retryable: true };
  return undefined;
}

/** For callVendor's generic classification (and its metrics): the code as the type, the message (scrubbed there). */
const readKlingError: VendorErrorReader = (body) => {
  const code = codeOf(body);
  const message = isObj(body) && typeof body.message === 'string' ? body.message : undefined;
  return { type: code === undefined ? undefined : `kling_${code}`, message };
};

/** The UpstreamError of a Kling answer that carries a non-zero code. */
function klingFailure(ch: ChannelTarget, res: UpstreamAnswer, describe: string): UpstreamError {
  const code = codeOf(res.data) ?? -1;
  const raw = isObj(res.data) && typeof res.data.message === 'string' ? res.data.message : '';
  const msg = `${describe} answered HTTP ${res.status} code ${code}${raw ? `: ${truncate(scrubSecret(raw, ch.apiKey), 300)}` : ''}`;
  const k = kindOf(code);
  if (!k) return classifyHttpFailure({ status: res.status >= 400 ? res.status : 502, errorType: `kling_${code}`, errorMessage: raw }, describe);
  const retryAfter = k.kind === 'quota' || k.kind === 'server' ? retryAfterMs(res.retryAfter) : undefined;
  return new UpstreamError(msg, k.retryable, res.status, k.kind, retryAfter);
}

/**
 * One Kling call: counted and timed by callVendor; a non-zero `code` (under any HTTP status) becomes the failure
 * its code documents. Transport failures and answers without a code keep callVendor's classification.
 */
export async function callKling(ch: ChannelTarget, op: VendorOperation, describe: string, send: () => Promise<UpstreamAnswer>): Promise<Json> {
  let raw: UpstreamAnswer | undefined;
  let res: UpstreamAnswer;
  try {
    res = await callVendor(ch, op, describe, async () => (raw = await send()), readKlingError);
  } catch (e) {
    if (raw && codeOf(raw.data) !== undefined && codeOf(raw.data) !== 0) throw klingFailure(ch, raw, describe);
    throw e;
  }
  if (codeOf(res.data) !== 0) {
    if (codeOf(res.data) === undefined) throw new UpstreamError(`${describe}: answer without a code`, true, res.status, 'server');
    throw klingFailure(ch, res, describe);
  }
  return res.data as Json;
}
