import { createHmac, timingSafeEqual } from 'node:crypto';
import { mediaUrlProblem } from './media-url';

/** Headers of a webhook delivery (docs/webhooks.md). */
export const WEBHOOK_HEADERS = Object.freeze({
  signature: 'X-Signature',
  timestamp: 'X-Timestamp',
  deliveryId: 'X-Delivery-Id',
  attempt: 'X-Delivery-Attempt',
} as const);

/** How far a receiver should accept a delivery's timestamp from its own clock (documented; receivers enforce it). */
export const WEBHOOK_REPLAY_WINDOW_SECONDS = 300;

/** `sha256=<hex>` of HMAC-SHA256(secret, `<timestamp>.<body>`): the timestamp is signed, so it cannot be replaced. */
export function signWebhook(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex')}`;
}

/**
 * A receiver's check (the docs show the same steps): the signature matches (constant time) and the timestamp is
 * within the replay window of `nowSeconds`.
 */
export function verifyWebhook(secret: string, timestamp: number, body: string, signature: string, nowSeconds: number): boolean {
  if (!Number.isFinite(timestamp) || Math.abs(nowSeconds - timestamp) > WEBHOOK_REPLAY_WINDOW_SECONDS) return false;
  const expected = Buffer.from(signWebhook(secret, timestamp, body));
  const got = Buffer.from(signature);
  return expected.length === got.length && timingSafeEqual(expected, got);
}

/** Longest accepted callback_url. */
const MAX_CALLBACK_URL = 2048;

/**
 * What is wrong with a `callback_url`, or undefined. Outside local mode: https only, and the literal checks of media
 * URLs (no private or reserved address or name); delivery checks the resolved address again at connect. In local
 * mode (`allowInsecure`) any http(s) URL without credentials passes: receivers on loopback are the point there.
 */
export function callbackUrlProblem(url: string, opts: { allowInsecure: boolean }): string | undefined {
  if (url.length > MAX_CALLBACK_URL) return `must be at most ${MAX_CALLBACK_URL} characters`;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'is not a valid absolute URL';
  }
  if (opts.allowInsecure) {
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return `must use http or https (got ${u.protocol.replace(/:$/, '')})`;
    return u.username || u.password ? 'must not contain credentials' : undefined;
  }
  if (u.protocol !== 'https:') return `must use https (got ${u.protocol.replace(/:$/, '')})`;
  return mediaUrlProblem(url);
}
