import { createRedis, type Redis } from '@gmg/queue';
import { TEST_REDIS_URL, deleteRedisPrefix, freePort, recordCalls, testPrincipal, uniqueRedisPrefix } from '@gmg/testing';
import { FailedAuthThrottle, authenticateThrottled } from './failed-auth.throttle';
import { KeyAuthenticator } from './key-authenticator';

const principal = testPrincipal();

/** Stands in for the Postgres key lookup and counts what reaches it. */
function countingLookup() {
  const calls: string[] = [];
  return { calls, authenticate: async (secret: string) => (calls.push(secret), secret === 'sk-good' ? principal : null) };
}

describe('failed-authentication throttle (real Redis)', () => {
  const clients: Redis[] = [];
  const prefixes: string[] = [];
  /**
   * A live client is used once ready (as the app's is); a dead one never becomes ready and keeps reconnecting, and
   * queues what it is given meanwhile (the 'client' role: offline queue on, two reconnections per command; main.ts's
   * 'producer' client would fail it at once): a command given to it would wait, so the limiter must give it none.
   */
  const redis = async (url = TEST_REDIS_URL) => {
    const live = url === TEST_REDIS_URL;
    const r = createRedis(url, 'client');
    r.on('error', () => undefined);
    clients.push(r);
    if (live) await r.ping();
    return r;
  };
  const throttle = (r: Redis, prefix: string, now?: () => number) =>
    new FailedAuthThrottle({ redis: r, prefix, limit: 3, windowSeconds: 60, blockSeconds: 120, now });
  const newPrefix = () => {
    const p = uniqueRedisPrefix();
    prefixes.push(p);
    return p;
  };

  afterAll(async () => {
    const live = clients.find((c) => c.status === 'ready');
    for (const p of prefixes) if (live) await deleteRedisPrefix(live, p);
    await Promise.all(clients.map((c) => (c.status === 'ready' ? c.quit() : Promise.resolve(c.disconnect()))));
  });

  it('refuses an address over its budget with 429 rate_limited and Retry-After BEFORE the key lookup', async () => {
    const lookup = countingLookup();
    const keys = new KeyAuthenticator(lookup, { ttlMs: 2000, missTtlMs: 1 });
    const auth = authenticateThrottled(keys, throttle(await redis(), newPrefix()));
    // 3 failures within the budget, the 4th goes over it: all four cost a lookup
    for (let i = 0; i < 4; i++) expect(await auth(`sk-guess-${i}`, () => '198.51.100.7')).toBeNull();
    expect(lookup.calls).toHaveLength(4);
    // from now on a new guess from that address is refused without asking Postgres
    const refused = await auth('sk-guess-5', () => '198.51.100.7').catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'rate_limited', details: { retryAfter: expect.any(Number) } });
    expect((refused as { details: { retryAfter: number } }).details.retryAfter).toBeGreaterThan(60);
    expect(lookup.calls).toHaveLength(4);
    // another address is not affected
    expect(await auth('sk-guess-6', () => '198.51.100.8')).toBeNull();
    expect(lookup.calls).toHaveLength(5);
  });

  it('keeps serving a cached valid key from the blocked address (it costs no lookup) and refuses uncached ones', async () => {
    const lookup = countingLookup();
    const keys = new KeyAuthenticator(lookup, { ttlMs: 2000, missTtlMs: 1 });
    const auth = authenticateThrottled(keys, throttle(await redis(), newPrefix()));
    expect(await auth('sk-good', () => '203.0.113.9')).toEqual(principal);
    for (let i = 0; i < 4; i++) await auth(`sk-bad-${i}`, () => '203.0.113.9');
    await expect(auth('sk-bad-x', () => '203.0.113.9')).rejects.toMatchObject({ code: 'rate_limited' });
    expect(await auth('sk-good', () => '203.0.113.9')).toEqual(principal);
    expect(lookup.calls.filter((s) => s === 'sk-good')).toHaveLength(1);
    // a cached key that authenticates never asks for the client address (req.ip parses X-Forwarded-For)
    const unasked = () => {
      throw new Error('the address was asked for');
    };
    expect(await auth('sk-good', unasked)).toEqual(principal);
  });

  it('shares the count across replicas through Redis: a second replica refuses after its first own lookup', async () => {
    const prefix = newPrefix();
    const [la, lb] = [countingLookup(), countingLookup()];
    const a = authenticateThrottled(new KeyAuthenticator(la, { ttlMs: 0 }), throttle(await redis(), prefix));
    const b = authenticateThrottled(new KeyAuthenticator(lb, { ttlMs: 0 }), throttle(await redis(), prefix));
    for (let i = 0; i < 3; i++) await a(`sk-a-${i}`, () => '192.0.2.50');
    expect(await b('sk-b-0', () => '192.0.2.50')).toBeNull(); // the 4th failure overall, counted in Redis: now blocked
    await expect(b('sk-b-1', () => '192.0.2.50')).rejects.toMatchObject({ code: 'rate_limited' });
    await expect(a('sk-a-9', () => '192.0.2.50')).resolves.toBeNull(); // a learns of the block with its next failure
    await expect(a('sk-a-10', () => '192.0.2.50')).rejects.toMatchObject({ code: 'rate_limited' });
    expect([la.calls.length, lb.calls.length]).toEqual([4, 1]);
  });

  it('lets the address try again when its block ends', async () => {
    let t = 1_000_000;
    const lookup = countingLookup();
    const auth = authenticateThrottled(
      new KeyAuthenticator(lookup, { ttlMs: 0 }),
      throttle(await redis(), newPrefix(), () => t),
    );
    for (let i = 0; i < 4; i++) await auth(`sk-${i}`, () => '192.0.2.77');
    await expect(auth('sk-5', () => '192.0.2.77')).rejects.toMatchObject({ code: 'rate_limited' });
    t += 121_000;
    expect(await auth('sk-good', () => '192.0.2.77')).toEqual(principal);
  });

  it('with Redis unreachable still throttles, counting in this replica (fails to local, neither open nor an outage)', async () => {
    const dead = recordCalls(await redis(`redis://127.0.0.1:${await freePort()}`));
    const lookup = countingLookup();
    const auth = authenticateThrottled(new KeyAuthenticator(lookup, { ttlMs: 0 }), throttle(dead.proxy, newPrefix()));
    dead.calls.length = 0; // what building the limiter called (defineCommand) is not a request's
    for (let i = 0; i < 4; i++) expect(await auth(`sk-${i}`, () => '192.0.2.99')).toBeNull();
    await expect(auth('sk-5', () => '192.0.2.99')).rejects.toMatchObject({ code: 'rate_limited' });
    expect(await auth('sk-good', () => '192.0.2.100')).toEqual(principal);
    expect(lookup.calls).toHaveLength(5);
    // never waits on the dead connection (a command given to it would wait for its reconnections): no command was
    // given to it, so the count above is this replica's own
    expect(dead.proxy.status).not.toBe('ready');
    expect(dead.calls).toEqual([]);
  });
});
