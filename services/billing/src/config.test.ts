import { loadBillingConfig } from './config';

describe('billing config', () => {
  it('fills the defaults: health port 9105, 20 settlements at once, 15 s sweeps', () => {
    expect(loadBillingConfig({})).toMatchObject({ HEALTH_PORT: 9105, SETTLE_CONCURRENCY: 20, SWEEP_INTERVAL_MS: 15_000, UNSETTLED_AFTER_MS: 30_000, QUEUE_PREFIX: 'gmg' });
  });

  it('rejects a zero concurrency', () => {
    expect(() => loadBillingConfig({ SETTLE_CONCURRENCY: '0' })).toThrow('SETTLE_CONCURRENCY');
  });
});
