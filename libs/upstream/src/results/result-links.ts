import { createHmac, timingSafeEqual } from 'node:crypto';

/** The edge's route of kept results; a link is `<public base>/v1/results/<key>?expires=<unix s>&signature=<hmac>`. */
export const RESULTS_PATH = '/v1/results';

export interface ResultLinksOptions {
  /** The gateway's public base (PUBLIC_BASE_URL), no trailing slash needed. */
  publicBaseUrl: string;
  /** RESULT_SIGNING_KEY: the edge and every worker share it; whoever holds it can mint links to any result. */
  signingKey: string;
}

/**
 * Signed links to kept results: the signature is the capability (no API key), bound to the key and its expiry.
 * HMAC-SHA256 of `<key>\n<expires>` under RESULT_SIGNING_KEY, base64url. Rotating the key ends every link at once.
 */
export interface ResultLinks {
  /** The signed link of `key`, valid until `expiresAtS` (unix seconds). */
  url(key: string, expiresAtS: number): string;
  sign(key: string, expiresAtS: number): string;
  /** True when `signature` is the key's for `expires` and `expires` is still ahead of `nowS`. Timing-safe. */
  verify(key: string, expires: string, signature: string, nowS: number): boolean;
}

export function createResultLinks(opts: ResultLinksOptions): ResultLinks {
  if (opts.signingKey.length < 16) throw new Error('the result signing key must be at least 16 characters');
  const base = opts.publicBaseUrl.replace(/\/+$/, '');
  const sign = (key: string, expiresAtS: number): string => createHmac('sha256', opts.signingKey).update(`${key}\n${expiresAtS}`).digest('base64url');
  return {
    sign,
    url: (key, expiresAtS) => `${base}${RESULTS_PATH}/${key}?expires=${expiresAtS}&signature=${sign(key, expiresAtS)}`,
    verify(key, expires, signature, nowS) {
      // Digits only: `1e10` or ` 123` would parse to a number yet sign a different string.
      if (!/^\d{1,12}$/.test(expires) || Number(expires) <= nowS) return false;
      const want = Buffer.from(sign(key, Number(expires)));
      const got = Buffer.from(signature);
      return got.length === want.length && timingSafeEqual(got, want);
    },
  };
}
