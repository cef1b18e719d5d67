import { loadBillingConfig } from './config';

describe('billing config', () => {
  it('fills the defaults: health port 9105, 20 settlements at once, 15 s sweeps', () => {
    expect(loadBillingConfig({})).toMatchObject({
      HEALTH_PORT: 9105,
      SETTLE_CONCURRENCY: 20,
      SWEEP_INTERVAL_MS: 15_000,
      UNSETTLED_AFTER_MS: 30_000,
      QUEUE_PREFIX: 'gmg',
    });
  });

  it('fills the webhook defaults: production mode, 14 attempts from 10 s, 24 h horizon', () => {
    expect(loadBillingConfig({})).toMatchObject({
      WEBHOOK_ALLOW_INSECURE: false,
      WEBHOOK_CONCURRENCY: 20,
      WEBHOOK_TIMEOUT_MS: 10_000,
      WEBHOOK_MAX_RESPONSE_BYTES: 65_536,
      WEBHOOK_ATTEMPTS: 14,
      WEBHOOK_BACKOFF_MS: 10_000,
      WEBHOOK_MAX_AGE_HOURS: 24,
    });
    expect(loadBillingConfig({ WEBHOOK_ALLOW_INSECURE: '1' }).WEBHOOK_ALLOW_INSECURE).toBe(true);
    // The documented horizon: the delays before attempts 2..14 (10 s doubling) add up to about 22.7 h, under 24 h.
    const c = loadBillingConfig({});
    const lastRetryMs = Array.from({ length: c.WEBHOOK_ATTEMPTS - 1 }, (_, i) => c.WEBHOOK_BACKOFF_MS * 2 ** i).reduce((a, b) => a + b, 0);
    expect(lastRetryMs / 3600_000).toBeGreaterThan(22);
    expect(lastRetryMs).toBeLessThan(c.WEBHOOK_MAX_AGE_HOURS * 3600_000);
  });

  it('reads the shards of its two queues from QUEUE_SHARDS (one each by default) and names the rule on a bad count', () => {
    expect(loadBillingConfig({}).QUEUE_SHARDS).toMatchObject({ billing: 1, webhook: 1, image: 1 });
    expect(loadBillingConfig({ QUEUE_SHARDS: 'image=2,billing=4,webhook=3' }).QUEUE_SHARDS).toMatchObject({ billing: 4, webhook: 3, image: 2, video: 1 });
    expect(() => loadBillingConfig({ QUEUE_SHARDS: 'billing=0' })).toThrow(/QUEUE_SHARDS.*counts 1 to 64.*billing=0/);
    expect(() => loadBillingConfig({ QUEUE_SHARDS: 'ledger=2' })).toThrow(/queues image, video, artgen, avatar, billing, webhook/);
  });

  it('rejects a zero concurrency', () => {
    expect(() => loadBillingConfig({ SETTLE_CONCURRENCY: '0' })).toThrow('SETTLE_CONCURRENCY');
  });
});
