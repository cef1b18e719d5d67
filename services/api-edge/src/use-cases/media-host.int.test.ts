import request from 'supertest';
import { startTestDnsServer, type TestDnsServer } from '@gmg/testing';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/**
 * Issue 11.6: media URL hosts are resolved at submit (docs/security.md), with a DNS server of the test's own on
 * loopback standing in for the internet's: a public-looking name that resolves to 127.0.0.1 is refused on every
 * submit path, before anything is held or queued.
 */
describe('media URL hosts resolved at submit', () => {
  let dns: TestDnsServer;
  let h: EdgeHarness;
  beforeAll(async () => {
    dns = await startTestDnsServer(
      { 'cdn.public-pictures.test': ['93.184.215.14'], '127.0.0.1.wildcard-dns.test': ['127.0.0.1'], 'meta.sneaky.test': ['93.184.215.14', '169.254.169.254'] },
      ['black-hole.test'],
    );
    h = await startEdgeHarness({ env: { MEDIA_DNS_SERVERS: dns.address, MEDIA_DNS_TIMEOUT_MS: '300', MEDIA_DNS_CACHE_TTL_MS: '0' } });
  });
  afterAll(async () => {
    await h?.close();
    await dns?.close();
  });

  const post = (key: string, path: string, body: object) => request(h.baseUrl).post(path).set('Authorization', `Bearer ${key}`).send(body);
  const tasksOf = async (accountId: string) =>
    Number((await h.db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [accountId]))[0].n);

  it.each([
    [
      'generations',
      '/v1/images/generations',
      (u: string) => ({ model: 'lumen-2-pro', prompt: 'x', image_urls: ['https://cdn.public-pictures.test/ok.png', u] }),
      'image_urls.1',
    ],
    ['art suite', '/v1/artgen/generations/imagine', (u: string) => ({ prompt: 'a lighthouse', image_urls: [u] }), 'image_urls.0'],
    ['avatar', '/v1/motion2/private-avatar', (u: string) => ({ asset_type: 'Image', project_name: 'p', assets: [{ url: u, name: 'a' }] }), 'assets.0.url'],
  ])('%s: refuses a name resolving to loopback or metadata with 400 naming the field; nothing is held', async (_name, path, body, field) => {
    const c = await h.newCustomer({ balance: 10 });
    for (const host of ['127.0.0.1.wildcard-dns.test', 'meta.sneaky.test']) {
      const res = await post(c.key, path, body(`https://${host}/x.png`));
      expect(res.status).toBe(400);
      // the art suite's error shape has no `code` (docs/artgen.md); the others are spec section 7
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', message: expect.stringContaining(`\`${field}\``) });
      expect(res.body.error.message).toContain('private, loopback or link-local');
    }
    expect(await tasksOf(c.accountId)).toBe(0);
    expect(dns.queries).toContain('127.0.0.1.wildcard-dns.test/A');
  });

  it("accepts public names and the gateway's own upload links, and refuses a host whose DNS does not answer in time", async () => {
    const c = await h.newCustomer({ balance: 10 });
    const ok = await post(c.key, '/v1/images/generations', {
      model: 'lumen-2-pro',
      prompt: 'x',
      image_urls: ['https://cdn.public-pictures.test/a.png', 'http://127.0.0.1:8080/v1/uploads/img_abc.png'],
    });
    expect(ok.status).toBe(200);
    const slow = await post(c.key, '/v1/images/generations', { model: 'lumen-2-pro', prompt: 'x', image_urls: ['https://black-hole.test/a.png'] });
    expect(slow.status).toBe(400);
    expect(slow.body.error.message).toMatch(/`image_urls\.0`.*could not be resolved/);
    expect(await tasksOf(c.accountId)).toBe(1);
  });

  it('resolves a callback_url host the same way (outside local mode): a name resolving to loopback is 400 naming callback_url', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const body = (hook: string) => ({ model: 'lumen-2-pro', prompt: 'x', callback_url: hook });
    const bad = await post(c.key, '/v1/images/generations', body('https://127.0.0.1.wildcard-dns.test/hook'));
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ type: 'invalid_request_error', message: expect.stringContaining('`callback_url`') });
    expect(bad.body.error.message).toContain('private, loopback or link-local');
    expect(await tasksOf(c.accountId)).toBe(0);
    const ok = await post(c.key, '/v1/images/generations', body('https://cdn.public-pictures.test/hook'));
    expect(ok.status).toBe(200);
    expect(await tasksOf(c.accountId)).toBe(1);
  });
});
