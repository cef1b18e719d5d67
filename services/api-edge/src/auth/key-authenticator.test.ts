import type { AuthPrincipal } from '@gmg/db';
import { testPrincipal } from '@gmg/testing';
import { KeyAuthenticator } from './key-authenticator';

const principal = testPrincipal();

function fakeLookup(known: Record<string, AuthPrincipal>) {
  const calls: string[] = [];
  return {
    calls,
    authenticate: async (secret: string) => {
      calls.push(secret);
      await new Promise((r) => setImmediate(r));
      return known[secret] ?? null;
    },
  };
}

describe('KeyAuthenticator', () => {
  it('refuses a cached key from the millisecond it expires, and a rotated-out secret from the end of its overlap, each with its own message', async () => {
    let t = 10_000;
    const lookup = fakeLookup({
      'sk-ending': testPrincipal({ expiresAt: new Date(10_500) }),
      'sk-old': testPrincipal({ rotatedSecretValidUntil: new Date(10_700) }),
    });
    const auth = new KeyAuthenticator(lookup, { ttlMs: 60_000, now: () => t });
    expect((await auth.authenticate('sk-ending'))?.keyId).toBe('k1');
    expect((await auth.authenticate('sk-old'))?.keyId).toBe('k1');
    t = 10_499;
    expect((await auth.authenticate('sk-ending'))?.keyId).toBe('k1');
    t = 10_500;
    await expect(auth.authenticate('sk-ending')).rejects.toMatchObject({
      code: 'authentication',
      message: expect.stringContaining('expired at 1970-01-01T00:00:10.500Z'),
    });
    expect((await auth.authenticate('sk-old'))?.keyId).toBe('k1');
    t = 10_700;
    await expect(auth.authenticate('sk-old')).rejects.toMatchObject({ code: 'authentication', message: expect.stringContaining('rotated') });
    // both answered from the cache: one lookup each
    expect(lookup.calls).toEqual(['sk-ending', 'sk-old']);
  });

  it('asks the store once for a burst of requests with the same key', async () => {
    const lookup = fakeLookup({ 'sk-good': principal });
    const auth = new KeyAuthenticator(lookup, { ttlMs: 2000 });
    const results = await Promise.all(Array.from({ length: 50 }, () => auth.authenticate('sk-good')));
    expect(results.every((r) => r?.keyId === 'k1')).toBe(true);
    expect(lookup.calls).toHaveLength(1);
    await auth.authenticate('sk-good');
    expect(lookup.calls).toHaveLength(1);
  });

  it('caches unknown keys too, but for a shorter time, so a new key works soon', async () => {
    const known: Record<string, AuthPrincipal> = {};
    const lookup = fakeLookup(known);
    let t = 1_000;
    const auth = new KeyAuthenticator(lookup, { ttlMs: 60_000, missTtlMs: 30, now: () => t });
    expect(await auth.authenticate('sk-new')).toBeNull();
    known['sk-new'] = principal;
    t += 29;
    expect(await auth.authenticate('sk-new')).toBeNull(); // still the remembered miss
    expect(lookup.calls).toHaveLength(1);
    t += 2;
    expect((await auth.authenticate('sk-new'))?.keyId).toBe('k1');
    expect(lookup.calls).toHaveLength(2);
  });

  it('re-reads a known key after the TTL, so a revocation applies, and not before', async () => {
    const known: Record<string, AuthPrincipal> = { 'sk-good': principal };
    const lookup = fakeLookup(known);
    let t = 1_000;
    const auth = new KeyAuthenticator(lookup, { ttlMs: 500, now: () => t });
    expect(await auth.authenticate('sk-good')).not.toBeNull();
    delete known['sk-good'];
    t += 499;
    expect(await auth.authenticate('sk-good')).not.toBeNull(); // trusted for the TTL
    t += 2;
    expect(await auth.authenticate('sk-good')).toBeNull();
    expect(lookup.calls).toHaveLength(2);
  });

  it('while Postgres is unreachable, a known key keeps working up to staleIfErrorMs past its TTL; an unknown key or a real error does not', async () => {
    const known: Record<string, AuthPrincipal> = { 'sk-good': principal };
    let down: Error | undefined;
    const lookup = {
      authenticate: async (secret: string) => {
        if (down) throw down;
        return known[secret] ?? null;
      },
    };
    let t = 1_000;
    const auth = new KeyAuthenticator(lookup, { ttlMs: 500, staleIfErrorMs: 10_000, now: () => t });
    expect(await auth.authenticate('sk-good')).not.toBeNull();
    expect(await auth.authenticate('sk-unknown')).toBeNull();
    down = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6432'), { code: 'ECONNREFUSED' });
    t += 5_000; // past the TTL, within the stale bound
    expect((await auth.authenticate('sk-good'))?.keyId).toBe('k1');
    await expect(auth.authenticate('sk-unknown')).rejects.toThrow('ECONNREFUSED');
    down = new Error('column "x" does not exist'); // a bug, not an outage: no stale answer
    await expect(auth.authenticate('sk-good')).rejects.toThrow('column');
    down = Object.assign(new Error('Connection terminated unexpectedly'), {});
    t += 6_000; // past TTL + staleIfErrorMs
    await expect(auth.authenticate('sk-good')).rejects.toThrow('Connection terminated');
    down = undefined; // back: the key is read again (a revocation during the outage applies now)
    delete known['sk-good'];
    expect(await auth.authenticate('sk-good')).toBeNull();
  });

  it('clear() forgets the lookups under way too: the next request asks again, and the older answer is not cached', async () => {
    const answers: Array<(p: AuthPrincipal | null) => void> = [];
    const lookup = { authenticate: () => new Promise<AuthPrincipal | null>((resolve) => answers.push(resolve)) };
    const auth = new KeyAuthenticator(lookup, { ttlMs: 60_000 });
    const before = auth.authenticate('sk-good'); // read before the key was revoked, answered after the clear
    auth.clear();
    expect(auth.isCached('sk-good')).toBe(false);
    const after = auth.authenticate('sk-good');
    expect(answers).toHaveLength(2);
    answers[1]!(null);
    expect(await after).toBeNull();
    answers[0]!(principal); // the older answer lands last
    expect(await before).toEqual(principal);
    // the revoked answer is the one cached: no third lookup, and the older answer did not overwrite it
    expect(await auth.authenticate('sk-good')).toBeNull();
    expect(answers).toHaveLength(2);
  });

  it('rejects empty and absurdly long secrets without a lookup', async () => {
    const lookup = fakeLookup({});
    const auth = new KeyAuthenticator(lookup, { ttlMs: 2000 });
    expect(await auth.authenticate('')).toBeNull();
    expect(await auth.authenticate('x'.repeat(1000))).toBeNull();
    expect(lookup.calls).toHaveLength(0);
  });
});
