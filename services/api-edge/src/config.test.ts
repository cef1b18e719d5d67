import { ConfigError } from '@gmg/config';
import { parseConfig } from './config';

describe('parseConfig', () => {
  it('fills the documented defaults', () => {
    const c = parseConfig({ ADMIN_TOKEN: 'admin-secret-0123456789abcdef' });
    expect(c).toMatchObject({
      port: 8080,
      publicBaseUrl: 'http://127.0.0.1:8080',
      taskTimeoutSeconds: 1800,
      maxBodyBytes: 25 * 1024 * 1024,
      authCacheTtlMs: 2000,
      priceCacheTtlMs: 5000,
      queuePrefix: 'gmg',
      redisRequireNoeviction: false,
      webhookAllowInsecure: false,
      adminQueuesWrite: false,
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('derives PUBLIC_BASE_URL from PORT and strips a trailing slash from an explicit one', () => {
    expect(parseConfig({ ADMIN_TOKEN: 'admin-secret-0123456789abcdef', PORT: '9000' }).publicBaseUrl).toBe('http://127.0.0.1:9000');
    expect(parseConfig({ ADMIN_TOKEN: 'admin-secret-0123456789abcdef', PUBLIC_BASE_URL: 'https://api.example.com/' }).publicBaseUrl).toBe('https://api.example.com');
  });

  it('refuses a short or placeholder ADMIN_TOKEN (it grants money and keys)', () => {
    expect(() => parseConfig({ ADMIN_TOKEN: 'short-token' })).toThrow(/ADMIN_TOKEN/);
    expect(() => parseConfig({ ADMIN_TOKEN: 'CHANGE-ME-to-a-long-random-token' })).toThrow(/ADMIN_TOKEN/);
  });

  it('has the upload defaults of the docs', () => {
    const c = parseConfig({ ADMIN_TOKEN: 'admin-secret-0123456789abcdef' });
    expect(c).toMatchObject({ uploadMaxBytes: 10 * 1024 * 1024, uploadTtlSeconds: 86400 });
    expect(c.uploadDir).toMatch(/\.data\/uploads$/);
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
