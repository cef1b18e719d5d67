import { ConfigError } from '@gmg/config';
import { loadPoolWorkerConfig } from './pool-worker.config';

const loadWorkerConfig = (env: Record<string, string | undefined>) => loadPoolWorkerConfig('video', env);

describe('pool worker config (worker-video)', () => {
  const SIGNING = { RESULT_SIGNING_KEY: 'result-signing-key-0123456789abcdef' };

  it('fills every default, with health port 9102', () => {
    expect(loadWorkerConfig(SIGNING)).toMatchObject({
      queuePrefix: 'gmg',
      healthPort: 9102,
      concurrency: 50,
      pollIntervalScale: 1,
      upstreamTimeoutMs: 30_000,
      sweepIntervalMs: 15_000,
      lockMs: 30_000,
      redisRequireNoeviction: false,
      postgres: { poolSize: 20, applicationName: 'gmg-worker-video' },
      results: {
        storeUrl: '.data/results',
        linkTtlSeconds: 86_400,
        maxBytes: 512 * 1024 * 1024,
        downloadTimeoutMs: 300_000,
        publicBaseUrl: 'http://127.0.0.1:8080',
      },
    });
    expect(loadWorkerConfig({ ...SIGNING, WORKER_CONCURRENCY: '4' }).postgres.poolSize).toBe(6);
  });

  it('requires the result signing key the edge has (no default: it is a secret)', () => {
    expect(() => loadWorkerConfig({})).toThrow(/RESULT_SIGNING_KEY/);
    expect(() => loadWorkerConfig({ RESULT_SIGNING_KEY: 'short' })).toThrow(/RESULT_SIGNING_KEY/);
  });

  it('vendor callbacks: off by default; a callback base URL needs the signing key the edge has (≥ 32 characters)', () => {
    const off = loadWorkerConfig(SIGNING);
    expect(off.callbacks.baseUrl).toBeUndefined();
    expect(off.callbacks.pollFactor).toBe(6);
    const base = { ...SIGNING, UPSTREAM_CALLBACK_BASE_URL: 'https://gw.example.com' };
    expect(() => loadWorkerConfig(base)).toThrow(/UPSTREAM_CALLBACK_SIGNING_KEY/);
    expect(() => loadWorkerConfig({ ...base, UPSTREAM_CALLBACK_SIGNING_KEY: 'short' })).toThrow(/UPSTREAM_CALLBACK_SIGNING_KEY/);
    expect(() => loadWorkerConfig({ ...base, UPSTREAM_CALLBACK_BASE_URL: 'ftp://x' })).toThrow(/UPSTREAM_CALLBACK_BASE_URL/);
    const on = loadWorkerConfig({ ...base, UPSTREAM_CALLBACK_SIGNING_KEY: 'callback-signing-key-0123456789abcdef', UPSTREAM_CALLBACK_POLL_FACTOR: '10' });
    expect(on.callbacks).toMatchObject({ baseUrl: 'https://gw.example.com', pollFactor: 10 });
    expect(() => loadWorkerConfig({ ...SIGNING, UPSTREAM_CALLBACK_POLL_FACTOR: '0.5' })).toThrow(/UPSTREAM_CALLBACK_POLL_FACTOR/);
  });

  it('lists every bad key at once', () => {
    try {
      loadWorkerConfig({ WORKER_CONCURRENCY: '0', POLL_INTERVAL_SCALE: '-1', REDIS_URL: 'http://x' });
      throw new Error('expected a ConfigError');
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const text = (e as ConfigError).problems.join('\n');
      for (const k of ['WORKER_CONCURRENCY', 'POLL_INTERVAL_SCALE', 'REDIS_URL']) expect(text).toContain(k);
    }
  });
});
