import type { AuthPrincipal } from '@gmg/db';
import { KeyAuthenticator } from './key-authenticator';

const principal: AuthPrincipal = {
  keyId: 'k1', accountId: 'a1', groupName: 'default', keyModels: null, groupModels: null, priceRatio: 1, rpsLimit: null, inflightLimit: null,
};

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
    const auth = new KeyAuthenticator(lookup, { ttlMs: 60_000, missTtlMs: 30 });
    expect(await auth.authenticate('sk-new')).toBeNull();
    expect(await auth.authenticate('sk-new')).toBeNull();
    expect(lookup.calls).toHaveLength(1);
    known['sk-new'] = principal;
    const deadline = Date.now() + 2000;
    let result: AuthPrincipal | null = null;
    while (!result && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
      result = await auth.authenticate('sk-new');
    }
    expect(result?.keyId).toBe('k1');
  });

  it('re-reads a known key after the TTL, so a revocation applies', async () => {
    const known: Record<string, AuthPrincipal> = { 'sk-good': principal };
    const lookup = fakeLookup(known);
    const auth = new KeyAuthenticator(lookup, { ttlMs: 30 });
    expect(await auth.authenticate('sk-good')).not.toBeNull();
    delete known['sk-good'];
    const deadline = Date.now() + 2000;
    let result: AuthPrincipal | null = principal;
    while (result && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
      result = await auth.authenticate('sk-good');
    }
    expect(result).toBeNull();
  });

  it('rejects empty and absurdly long secrets without a lookup', async () => {
    const lookup = fakeLookup({});
    const auth = new KeyAuthenticator(lookup, { ttlMs: 2000 });
    expect(await auth.authenticate('')).toBeNull();
    expect(await auth.authenticate('x'.repeat(1000))).toBeNull();
    expect(lookup.calls).toHaveLength(0);
  });
});
