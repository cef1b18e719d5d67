import { timingSafeEqual } from 'node:crypto';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { ErrorType } from '@gmg/contracts';

/** What a test made of one key: the vendor revoked it (with its message) or rate-limits its submits. */
export type SimKeyTrouble = { state: 'revoked'; message: string } | { state: 'rate_limited' };

const same = (a: string, b: string): boolean => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * The vendor's side of its keys (issue 37's acceptance): the keys it accepts (SIM_API_KEY and SIM_API_KEYS) and the
 * trouble a test puts a key in through POST /__sim/keys — revoked (every request with it: 401 with the message) or
 * rate-limited (its submits: 429, Retry-After 1) — until the test heals it. Process memory: a restarted simulator
 * has healed every key.
 */
export class SimKeys {
  private readonly trouble = new Map<string, SimKeyTrouble>();

  constructor(private readonly keys: readonly string[]) {}

  /** Undefined: any non-empty key passes (no key configured). */
  get configured(): boolean {
    return this.keys.length > 0;
  }

  accepts(key: string | undefined): boolean {
    if (!key) return false;
    return !this.configured || this.keys.some((k) => same(k, key));
  }

  troubleOf(key: string): SimKeyTrouble | undefined {
    return this.trouble.get(key);
  }

  /** POST /__sim/keys `{key, state: 'revoked'|'rate_limited'|'ok', message?}` (ok heals it); GET lists the troubled keys' states. */
  router(): Router {
    const r = express.Router();
    r.use(express.json());
    r.post('/', (req, res) => {
      const b = req.body as { key?: unknown; state?: unknown; message?: unknown };
      if (typeof b?.key !== 'string' || !this.accepts(b.key)) return void res.status(400).json({ error: 'key: one of the keys this simulator accepts' });
      if (b.state === 'ok') this.trouble.delete(b.key);
      else if (b.state === 'revoked') this.trouble.set(b.key, { state: 'revoked', message: typeof b.message === 'string' ? b.message : 'API key revoked' });
      else if (b.state === 'rate_limited') this.trouble.set(b.key, { state: 'rate_limited' });
      else return void res.status(400).json({ error: 'state: ok, revoked or rate_limited' });
      res.json({ ok: true });
    });
    r.get('/', (_req, res) => res.json({ troubled: [...this.trouble.values()].map((t) => t.state) }));
    return r;
  }

  /**
   * The gateway protocol's guard (/v1): `Authorization: Bearer <key>` of an accepted key, not revoked; a rate-limited
   * key's POSTs answer 429. `deny` answers in the caller's error shape (status, type, message).
   */
  bearer(deny: (res: Response, status: number, type: ErrorType, message: string) => void) {
    return (req: Request, res: Response, next: NextFunction) => {
      const m = /^Bearer\s+(.+)$/i.exec(req.header('authorization') ?? '');
      const key = m?.[1]?.trim() ?? '';
      if (!this.accepts(key)) return deny(res, 401, 'authentication_error', 'invalid or missing API key');
      const t = this.troubleOf(key);
      if (t?.state === 'revoked') return deny(res, 401, 'authentication_error', t.message);
      if (t?.state === 'rate_limited' && req.method === 'POST') {
        res.setHeader('Retry-After', '1');
        return deny(res, 429, 'rate_limit_error', 'Rate limit reached for requests with this key');
      }
      next();
    };
  }
}
