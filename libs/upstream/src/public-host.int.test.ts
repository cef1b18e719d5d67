import { PublicHostResolver } from './public-host';
import { startTestDnsServer, type TestDnsServer } from '@gmg/testing';

describe('PublicHostResolver against a DNS server of the test (loopback UDP)', () => {
  let dns: TestDnsServer;
  beforeAll(async () => {
    dns = await startTestDnsServer(
      {
        'cdn.public-media.test': ['93.184.215.14', '2606:4700::1111'],
        '127.0.0.1.wildcard-dns.test': ['127.0.0.1'],
        'metadata.sneaky.test': ['169.254.169.254'],
        'mixed.sneaky.test': ['93.184.215.14', '10.0.0.5'],
        'v6-loopback.sneaky.test': ['93.184.215.14', '::1'],
      },
      ['black-hole.test'],
    );
  });
  afterAll(async () => {
    await dns?.close();
  });

  const resolver = (opts: { cacheTtlMs?: number; timeoutMs?: number } = {}) =>
    new PublicHostResolver({ servers: [dns.address], timeoutMs: opts.timeoutMs ?? 1000, cacheTtlMs: opts.cacheTtlMs ?? 0 });

  it('accepts a name whose every A and AAAA address is public', async () => {
    expect(await resolver().checkUrl('https://cdn.public-media.test/cat.png')).toEqual({ kind: 'public' });
  });

  it.each([
    ['127.0.0.1.wildcard-dns.test', ['127.0.0.1']],
    ['metadata.sneaky.test', ['169.254.169.254']],
    ['mixed.sneaky.test', ['10.0.0.5']],
    ['v6-loopback.sneaky.test', ['::1']],
  ])('refuses %s: one private address is enough', async (host, addresses) => {
    expect(await resolver().checkUrl(`https://${host}/x.png`)).toEqual({ kind: 'private', addresses });
  });

  it('classifies literal addresses without asking DNS', async () => {
    const before = dns.queries.length;
    expect(await resolver().checkUrl('http://[::ffff:127.0.0.1]/a')).toMatchObject({ kind: 'private' });
    expect(await resolver().checkUrl('http://8.8.8.8/a')).toEqual({ kind: 'public' });
    expect(dns.queries.length).toBe(before);
  });

  it('takes a name that does not exist as public (it reaches nothing)', async () => {
    expect(await resolver().checkHost('no-such-name.test')).toEqual({ kind: 'public' });
  });

  it('answers unresolved within its timeout when the DNS server never answers', async () => {
    // the black hole never answers: `unresolved` can only come from the resolver's own timeout
    expect(await resolver({ timeoutMs: 300 }).checkHost('black-hole.test')).toMatchObject({ kind: 'unresolved' });
  });

  it('caches a verdict per host and shares one lookup among concurrent checks', async () => {
    const r = resolver({ cacheTtlMs: 60_000 });
    const count = () => dns.queries.filter((q) => q.startsWith('mixed.sneaky.test/')).length;
    const before = count();
    const verdicts = await Promise.all(Array.from({ length: 5 }, () => r.checkHost('MIXED.sneaky.test.')));
    expect(verdicts.every((v) => v.kind === 'private')).toBe(true);
    await r.checkHost('mixed.sneaky.test');
    expect(count() - before).toBe(2); // one A and one AAAA question
  });
});
