import { loadBillingConfig } from './config';

describe('billing config', () => {
  it('fills the defaults: health port 9105, 20 settlements at once, 15 s sweeps', () => {
    expect(loadBillingConfig({})).toMatchObject({
      healthPort: 9105,
      settlements: { concurrency: 20, sweepIntervalMs: 15_000, unsettledAfterMs: 30_000 },
      queuePrefix: 'gmg',
    });
  });

  it('sizes its Postgres pool from its settlements and retention lanes unless PG_POOL_MAX is set (at most 30)', () => {
    expect(loadBillingConfig({}).postgres).toMatchObject({ poolSize: 22, applicationName: 'gmg-billing' });
    expect(loadBillingConfig({ SETTLE_CONCURRENCY: '10', RETENTION_PARALLEL: '3' }).postgres.poolSize).toBe(18);
    expect(loadBillingConfig({ SETTLE_CONCURRENCY: '100' }).postgres.poolSize).toBe(30);
    expect(loadBillingConfig({ PG_POOL_MAX: '7' }).postgres.poolSize).toBe(7);
  });

  it('fills the webhook defaults: production mode, 14 attempts from 10 s, 24 h horizon', () => {
    expect(loadBillingConfig({}).webhooks).toEqual({
      allowInsecure: false,
      concurrency: 20,
      timeoutMs: 10_000,
      maxResponseBytes: 65_536,
      attempts: 14,
      backoffMs: 10_000,
      maxAgeMs: 24 * 3600_000,
    });
    expect(loadBillingConfig({ WEBHOOK_ALLOW_INSECURE: '1' }).webhooks.allowInsecure).toBe(true);
    // The documented horizon: the delays before attempts 2..14 (10 s doubling) add up to about 22.7 h, under 24 h.
    const c = loadBillingConfig({}).webhooks;
    const lastRetryMs = Array.from({ length: c.attempts - 1 }, (_, i) => c.backoffMs * 2 ** i).reduce((a, b) => a + b, 0);
    expect(lastRetryMs / 3600_000).toBeGreaterThan(22);
    expect(lastRetryMs).toBeLessThan(c.maxAgeMs);
  });

  it('reads the shards of its two queues from QUEUE_SHARDS (one each by default) and names the rule on a bad count', () => {
    expect(loadBillingConfig({}).queueShards).toMatchObject({ billing: 1, webhook: 1, image: 1 });
    expect(loadBillingConfig({ QUEUE_SHARDS: 'image=2,billing=4,webhook=3' }).queueShards).toMatchObject({ billing: 4, webhook: 3, image: 2, video: 1 });
    expect(() => loadBillingConfig({ QUEUE_SHARDS: 'billing=0' })).toThrow(/QUEUE_SHARDS.*counts 1 to 64.*billing=0/);
    expect(() => loadBillingConfig({ QUEUE_SHARDS: 'ledger=2' })).toThrow(/queues image, video, artgen, avatar, billing, webhook/);
  });

  it('rejects a zero concurrency', () => {
    expect(() => loadBillingConfig({ SETTLE_CONCURRENCY: '0' })).toThrow('SETTLE_CONCURRENCY');
  });
});
