import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { fetchUserMedia, isAllowedPrefix } from './safe-http';

describe('isAllowedPrefix', () => {
  const prefixes = ['http://127.0.0.1:8080/files/'];
  it('accepts a URL under the prefix', () => {
    expect(isAllowedPrefix(new URL('http://127.0.0.1:8080/files/a.png'), prefixes)).toBe(true);
  });
  it('refuses another path, port, or a URL with credentials', () => {
    expect(isAllowedPrefix(new URL('http://127.0.0.1:8080/other/a.png'), prefixes)).toBe(false);
    expect(isAllowedPrefix(new URL('http://127.0.0.1:8081/files/a.png'), prefixes)).toBe(false);
    expect(isAllowedPrefix(new URL('http://u:p@127.0.0.1:8080/files/a.png'), prefixes)).toBe(false);
    expect(isAllowedPrefix(new URL('http://127.0.0.1.evil.test:8080/files/a.png'), prefixes)).toBe(false);
  });
});

describe('fetchUserMedia', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    const app = express();
    app.get('/files/small.png', (_req, res) => res.type('image/png').send(Buffer.alloc(100, 1)));
    app.get('/files/big.bin', (_req, res) => res.type('application/octet-stream').send(Buffer.alloc(50_000, 1)));
    app.get('/files/silent', () => undefined);
    app.get('/files/hop', (_req, res) => res.redirect(302, '/files/small.png'));
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const opts = () => ({ timeoutMs: 1000, maxBytes: 10_000, allowPrefixes: [`${base}/files/`] });

  it('refuses a loopback address that is not an allowed prefix', async () => {
    await expect(fetchUserMedia(`${base}/files/small.png`, { ...opts(), allowPrefixes: [] })).rejects.toMatchObject({ details: { rule: 'ssrf' } });
  });

  it('refuses a host name that resolves to loopback (checked after DNS)', async () => {
    const url = `${base.replace('127.0.0.1', 'localhost')}/files/small.png`;
    await expect(fetchUserMedia(url, { ...opts(), allowPrefixes: [] })).rejects.toMatchObject({ details: { rule: 'ssrf' } });
  });

  it('refuses the cloud metadata address without connecting', async () => {
    await expect(fetchUserMedia('http://169.254.169.254/latest/meta-data/', opts())).rejects.toMatchObject({ details: { rule: 'ssrf' } });
  });

  it('refuses non-http schemes', async () => {
    await expect(fetchUserMedia('file:///etc/passwd', opts())).rejects.toMatchObject({ details: { rule: 'url' } });
  });

  it('fetches an allowed-prefix URL, following a redirect', async () => {
    const got = await fetchUserMedia(`${base}/files/hop`, opts());
    expect(got.body.length).toBe(100);
    expect(got.contentType).toBe('image/png');
  });

  it('aborts a body above maxBytes', async () => {
    await expect(fetchUserMedia(`${base}/files/big.bin`, opts())).rejects.toMatchObject({ details: { rule: 'max-bytes' } });
  });

  it('gives up on a silent server after the timeout', async () => {
    await expect(fetchUserMedia(`${base}/files/silent`, { ...opts(), timeoutMs: 200 })).rejects.toMatchObject({ details: { rule: 'timeout' } });
  });
});
