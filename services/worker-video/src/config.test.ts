import { ConfigError } from '@gmg/config';
import { loadWorkerConfig } from './config';

describe('worker-video config', () => {
  it('fills every default, with health port 9102', () => {
    expect(loadWorkerConfig({})).toMatchObject({
      QUEUE_PREFIX: 'gmg',
      HEALTH_PORT: 9102,
      WORKER_CONCURRENCY: 50,
      POLL_INTERVAL_SCALE: 1,
      UPSTREAM_TIMEOUT_MS: 30_000,
      SWEEP_INTERVAL_MS: 15_000,
      WORKER_LOCK_MS: 30_000,
      REDIS_REQUIRE_NOEVICTION: false,
    });
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
