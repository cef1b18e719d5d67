import path from 'node:path';
import { ConfigError } from '@gmg/config';
import { parseConfig } from './config';

describe('parseConfig', () => {
  it('fills the documented defaults', () => {
    const c = parseConfig({ ADMIN_TOKEN: 'admin-secret-0123456789abcdef', RESULT_SIGNING_KEY: 'result-signing-key-0123456789abcdef' });
    expect(c).toMatchObject({
      port: 8080,
      publicBaseUrl: 'http://127.0.0.1:8080',
      taskTimeoutSeconds: 1800,
      maxBodyBytes: 25 * 1024 * 1024,
      maxBodyBytesInFlight: 64 * 1024 * 1024,
      bodyBudgetWaitMs: 10_000,
      authCacheTtlMs: 2000,
      authStaleIfErrorMs: 300000,
      priceCacheTtlMs: 5000,
      queuePrefix: 'gmg',
      redisRequireNoeviction: false,
      webhookAllowInsecure: false,
      adminQueuesWrite: false,
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('UPSTREAM_CALLBACK_SIGNING_KEY: unset by default (no callback route), else at least 32 characters', () => {
    const base = { ADMIN_TOKEN: 'admin-secret-0123456789abcdef', RESULT_SIGNING_KEY: 'result-signing-key-0123456789abcdef' };
    expect(parseConfig(base).upstreamCallbackSigningKey).toBeUndefined();
    expect(parseConfig({ ...base, UPSTREAM_CALLBACK_SIGNING_KEY: 'callback-signing-key-0123456789abcdef' }).upstreamCallbackSigningKey).toBe(
      'callback-signing-key-0123456789abcdef',
    );
    expect(() => parseConfig({ ...base, UPSTREAM_CALLBACK_SIGNING_KEY: 'short' })).toThrow(ConfigError);
  });

  it('derives PUBLIC_BASE_URL from PORT and strips a trailing slash from an explicit one', () => {
    expect(
      parseConfig({ ADMIN_TOKEN: 'admin-secret-0123456789abcdef', RESULT_SIGNING_KEY: 'result-signing-key-0123456789abcdef', PORT: '9000' }).publicBaseUrl,
    ).toBe('http://127.0.0.1:9000');
    expect(
      parseConfig({
        ADMIN_TOKEN: 'admin-secret-0123456789abcdef',
        RESULT_SIGNING_KEY: 'result-signing-key-0123456789abcdef',
        PUBLIC_BASE_URL: 'https://api.example.com/',
      }).publicBaseUrl,
    ).toBe('https://api.example.com');
  });

  it('refuses a short or placeholder ADMIN_TOKEN (it grants money and keys)', () => {
    expect(() => parseConfig({ ADMIN_TOKEN: 'short-token' })).toThrow(/ADMIN_TOKEN/);
    expect(() => parseConfig({ ADMIN_TOKEN: 'CHANGE-ME-to-a-long-random-token' })).toThrow(/ADMIN_TOKEN/);
  });

  it('CONSOLE_DIR: unset by default (packages/console/dist), else absolute; CONSOLE_MEDIA_SOURCES: https: by default, sources only', () => {
    const base = { ADMIN_TOKEN: 'admin-secret-0123456789abcdef', RESULT_SIGNING_KEY: 'result-signing-key-0123456789abcdef' };
    expect(parseConfig(base)).toMatchObject({ consoleDir: undefined, consoleMediaSources: ['https:'] });
    expect(parseConfig({ ...base, CONSOLE_DIR: 'build/console' }).consoleDir).toBe(path.resolve('build/console'));
    expect(parseConfig({ ...base, CONSOLE_MEDIA_SOURCES: '' }).consoleMediaSources).toEqual([]);
    expect(parseConfig({ ...base, CONSOLE_MEDIA_SOURCES: ' https://cdn.example.com  https://*.vendor.io:8443 ' }).consoleMediaSources).toEqual([
      'https://cdn.example.com',
      'https://*.vendor.io:8443',
    ]);
    // no way to widen the policy beyond media sources (a quote, a semicolon, a keyword)
    for (const bad of ["'unsafe-inline'", 'https:; script-src *', '*', 'javascript:', 'https://cdn.example.com/path']) {
      expect(() => parseConfig({ ...base, CONSOLE_MEDIA_SOURCES: bad })).toThrow(/CONSOLE_MEDIA_SOURCES/);
    }
  });

  it('has the upload defaults of the docs', () => {
    const c = parseConfig({ ADMIN_TOKEN: 'admin-secret-0123456789abcdef', RESULT_SIGNING_KEY: 'result-signing-key-0123456789abcdef' });
    expect(c).toMatchObject({ uploadMaxBytes: 10 * 1024 * 1024, uploadTtlSeconds: 86400 });
    expect(c.uploadDir).toMatch(/\.data\/uploads$/);
  });

  it('has the result store defaults of the docs, reads an s3:// store as given, and requires a long RESULT_SIGNING_KEY', () => {
    const base = { ADMIN_TOKEN: 'admin-secret-0123456789abcdef', RESULT_SIGNING_KEY: 'result-signing-key-0123456789abcdef' };
    const c = parseConfig(base);
    expect(c).toMatchObject({ resultLinkTtlSeconds: 86400, resultStoreRegion: 'us-east-1', resultStoreForcePathStyle: false, resultStoreEndpoint: undefined });
    expect(c.resultStoreUrl).toMatch(/^\/.*\.data\/results$/);
    const s3 = parseConfig({ ...base, RESULT_STORE_URL: 's3://my-bucket/gw', RESULT_STORE_ENDPOINT: 'http://minio:9000', RESULT_STORE_FORCE_PATH_STYLE: '1' });
    expect(s3).toMatchObject({ resultStoreUrl: 's3://my-bucket/gw', resultStoreEndpoint: 'http://minio:9000', resultStoreForcePathStyle: true });
    expect(() => parseConfig({ ...base, RESULT_SIGNING_KEY: undefined })).toThrow(/RESULT_SIGNING_KEY/);
    expect(() => parseConfig({ ...base, RESULT_SIGNING_KEY: 'too-short' })).toThrow(/RESULT_SIGNING_KEY/);
    expect(() => parseConfig({ ...base, RESULT_SIGNING_KEY: 'change-me-change-me-change-me-change-me' })).toThrow(/RESULT_SIGNING_KEY/);
    expect(() => parseConfig({ ...base, RESULT_STORE_URL: 'http://example.com/x' })).toThrow(/RESULT_STORE_URL/);
  });

  it('lists every bad key at once: missing ADMIN_TOKEN, auth cache above 5 s, bad port', () => {
    try {
      parseConfig({ AUTH_CACHE_TTL_MS: '6000', PORT: 'eighty' });
      throw new Error('accepted');
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const problems = (e as ConfigError).problems.join('\n');
      expect(problems).toMatch(/ADMIN_TOKEN/);
      expect(problems).toMatch(/AUTH_CACHE_TTL_MS/);
      expect(problems).toMatch(/PORT/);
    }
  });
});

describe('parseConfig: fair use and media URL resolution', () => {
  const base = { ADMIN_TOKEN: 'admin-secret-0123456789abcdef', RESULT_SIGNING_KEY: 'result-signing-key-0123456789abcdef' };
  it('defaults: trust no proxy, 20 failed authentications per 60 s then 300 s blocked, system DNS with 2 s timeout', () => {
    expect(parseConfig(base)).toMatchObject({
      trustProxy: false,
      failedAuthLimit: 20,
      failedAuthWindowSeconds: 60,
      failedAuthBlockSeconds: 300,
      mediaDnsServers: [],
      mediaDnsTimeoutMs: 2000,
      mediaDnsCacheTtlMs: 60_000,
    });
  });
  it('reads TRUST_PROXY as a number of hops or a list of proxy addresses, and refuses `true` and nonsense', () => {
    expect(parseConfig({ ...base, TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(parseConfig({ ...base, TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::1' }).trustProxy).toBe('loopback,10.0.0.0/8,fd00::1');
    expect(parseConfig({ ...base, TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(() => parseConfig({ ...base, TRUST_PROXY: 'true' })).toThrow(/TRUST_PROXY.*every hop/);
    expect(() => parseConfig({ ...base, TRUST_PROXY: '10.0.0.0/33' })).toThrow(/TRUST_PROXY/);
    expect(() => parseConfig({ ...base, TRUST_PROXY: 'proxy.internal' })).toThrow(/TRUST_PROXY/);
  });
  it('reads MEDIA_DNS_SERVERS as addresses with optional ports, and refuses host names', () => {
    expect(parseConfig({ ...base, MEDIA_DNS_SERVERS: '127.0.0.1:5353, [::1]:53,10.0.0.2' }).mediaDnsServers).toEqual([
      '127.0.0.1:5353',
      '[::1]:53',
      '10.0.0.2',
    ]);
    expect(() => parseConfig({ ...base, MEDIA_DNS_SERVERS: 'dns.example.com' })).toThrow(/MEDIA_DNS_SERVERS/);
    expect(() => parseConfig({ ...base, MEDIA_DNS_SERVERS: '127.0.0.1:70000' })).toThrow(/MEDIA_DNS_SERVERS/);
  });
});
