import { createHash, createHmac } from 'node:crypto';
import { UpstreamError } from '@gmg/errors';

/**
 * Kling's API token (commonInfo, "API authentication"): an HS256 JWT `{iss: access key, exp: now + 1800, nbf: now - 5}`
 * signed with the secret key, sent as `Authorization: Bearer <token>`. A channel's key is `<access_key>|<secret_key>`
 * (new-api's convention, relay/channel/task/kling/adaptor.go).
 */
const LIFETIME_S = 1800;
const NOT_BEFORE_SKEW_S = 5;
/** A cached token is renewed once less than this is left (a slow submit must not arrive with an expired one). */
const RENEW_BEFORE_S = 300;
const MAX_CACHED = 1000;

const b64url = (s: string | Buffer): string => Buffer.from(s).toString('base64url');

/** The two halves of a channel key; a key of another shape is the channel's fault (fail over, never echo it). */
function splitKey(apiKey: string): { access: string; secret: string } {
  const parts = apiKey.split('|').map((p) => p.trim());
  if (parts.length !== 2 || !parts[0] || !parts[1]) {
    throw new UpstreamError('kling: the channel key must be <access_key>|<secret_key>', true, undefined, 'channel');
  }
  return { access: parts[0], secret: parts[1] };
}

/** A fresh token for `apiKey` at `nowS` (seconds). */
export function signKlingJwt(apiKey: string, nowS: number): string {
  const { access, secret } = splitKey(apiKey);
  const head = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const body = b64url(JSON.stringify({ iss: access, exp: nowS + LIFETIME_S, nbf: nowS - NOT_BEFORE_SKEW_S }));
  const sig = createHmac('sha256', secret).update(`${head}.${body}`).digest('base64url');
  return `${head}.${body}.${sig}`;
}

/**
 * Tokens per channel key, reused until RENEW_BEFORE_S before they expire. Keyed by a hash of the key (the cache never
 * holds the secret itself); bounded: past MAX_CACHED keys it starts over.
 */
export function klingTokenCache(now: () => number): (apiKey: string) => string {
  const cache = new Map<string, { token: string; exp: number }>();
  return (apiKey) => {
    const nowS = Math.floor(now() / 1000);
    const id = createHash('sha256').update(apiKey).digest('base64url');
    const hit = cache.get(id);
    if (hit && hit.exp - nowS > RENEW_BEFORE_S) return hit.token;
    const token = signKlingJwt(apiKey, nowS);
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(id, { token, exp: nowS + LIFETIME_S });
    return token;
  };
}
