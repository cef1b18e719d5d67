import { createHmac, timingSafeEqual } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import type { VendorSimContext } from '../vendor-sim-kit';

/**
 * Kling's token check (commonInfo, "API authentication" and "Error Codes"): `Authorization: Bearer <JWT>`, HS256,
 * `iss` the access key, signed with the secret key, `nbf` passed and `exp` not yet. Refusals are HTTP 401 with
 * Kling's codes: 1001 no Authorization, 1002 not a token, 1000 wrong signature or issuer, 1003 not yet valid,
 * 1004 expired.
 *
 * Which keys (decided here; Kling has one account per key pair): the simulator's `apiKey` split on `|` is the
 * expected `<access_key>|<secret_key>`; an `apiKey` without `|` is the secret and any issuer passes (a channel key
 * `anything|<SIM_API_KEY>` then works); no `apiKey` at all: any well-formed, current token passes, signature unchecked
 * (the simulator cannot know a secret nobody gave it).
 */
export const klingError = (res: Response, status: number, code: number, message: string): void => {
  res.status(status).json({ code, message, request_id: `sim-${Date.now().toString(36)}` });
};

interface Expected {
  access?: string;
  secret?: string;
}

function expectedOf(apiKey: string | undefined): Expected {
  if (apiKey === undefined) return {};
  const at = apiKey.indexOf('|');
  return at < 0 ? { secret: apiKey } : { access: apiKey.slice(0, at).trim(), secret: apiKey.slice(at + 1).trim() };
}

const parse = (part: string | undefined): Record<string, unknown> | undefined => {
  try {
    const v: unknown = JSON.parse(Buffer.from(part ?? '', 'base64url').toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
};

const signatureOk = (signed: string, sig: string, secret: string): boolean => {
  const want = createHmac('sha256', secret).update(signed).digest();
  const got = Buffer.from(sig, 'base64url');
  return got.length === want.length && timingSafeEqual(got, want);
};

/** The first problem of a token at `nowS`, as Kling's [code, message], or undefined. */
export function klingTokenProblem(token: string, expected: Expected, nowS: number): [number, string] | undefined {
  const [h, p, sig, ...rest] = token.split('.');
  const head = parse(h);
  const claims = parse(p);
  if (rest.length || !sig || head?.alg !== 'HS256' || !claims) return [1002, 'Authorization is invalid'];
  if (typeof claims.iss !== 'string' || typeof claims.exp !== 'number' || typeof claims.nbf !== 'number') return [1002, 'Authorization is invalid'];
  if (expected.access !== undefined && claims.iss !== expected.access) return [1000, 'Authentication failed'];
  if (expected.secret !== undefined && !signatureOk(`${h}.${p}`, sig, expected.secret)) return [1000, 'Authentication failed'];
  if (claims.nbf > nowS) return [1003, 'Token is not yet valid'];
  if (claims.exp <= nowS) return [1004, 'Token has expired'];
  return undefined;
}

export function klingAuth(ctx: Pick<VendorSimContext, 'apiKey' | 'now'>): RequestHandler {
  const expected = expectedOf(ctx.apiKey);
  return (req, res, next) => {
    const header = req.header('authorization');
    if (!header) return klingError(res, 401, 1001, 'Authorization is empty');
    const m = /^Bearer (\S+)$/.exec(header);
    if (!m) return klingError(res, 401, 1002, 'Authorization is invalid');
    const problem = klingTokenProblem(m[1]!, expected, Math.floor(ctx.now() / 1000));
    if (problem) return klingError(res, 401, problem[0], problem[1]);
    next();
  };
}
