import { DEFAULT_POLL_INTERVAL_MS, MIN_STEP_DELAY_MS, pollDelayMs, retryDelayMs } from './step-timing';

describe('pollDelayMs', () => {
  it('stays within the default interval for a model without a contract, at scale 1', () => {
    for (const r of [0, 0.5, 0.999]) {
      const d = pollDelayMs('no-such-model', { scale: 1, random: () => r });
      expect(d).toBeGreaterThanOrEqual(DEFAULT_POLL_INTERVAL_MS.min);
      expect(d).toBeLessThanOrEqual(DEFAULT_POLL_INTERVAL_MS.max);
    }
  });

  it('scales the interval down but never below the floor', () => {
    expect(pollDelayMs('no-such-model', { scale: 0.1, random: () => 0 })).toBe(200);
    expect(pollDelayMs('no-such-model', { scale: 0.0001, random: () => 0 })).toBe(MIN_STEP_DELAY_MS);
  });
});

describe('retryDelayMs', () => {
  const t = { scale: 1, baseMs: 1000, maxMs: 8000 };
  it('doubles per attempt with jitter in the upper half of the step', () => {
    expect(retryDelayMs(1, { ...t, random: () => 0 })).toBe(500);
    expect(retryDelayMs(1, { ...t, random: () => 0.999 })).toBeLessThanOrEqual(1000);
    expect(retryDelayMs(3, { ...t, random: () => 0 })).toBe(2000);
  });

  it('caps the step at maxMs', () => {
    expect(retryDelayMs(20, { ...t, random: () => 0.999 })).toBeLessThanOrEqual(8000);
  });
});

describe('per-model poll cadence (spec 4.2)', () => {
  it('polls pixel-v6 every 5 s', () => {
    for (const r of [0, 0.5, 0.999]) expect(pollDelayMs('pixel-v6', { scale: 1, random: () => r })).toBe(5000);
  });
  it('polls Omni-Flash-Ext every 5 to 10 s', () => {
    expect(pollDelayMs('Omni-Flash-Ext', { scale: 1, random: () => 0 })).toBe(5000);
    expect(pollDelayMs('Omni-Flash-Ext', { scale: 1, random: () => 0.999 })).toBeGreaterThan(9900);
    expect(pollDelayMs('Omni-Flash-Ext', { scale: 1, random: () => 0.999 })).toBeLessThanOrEqual(10_000);
  });
  it("polls an art suite task at its action's cadence (describe answers in 1-3 s, so its first poll is soon)", () => {
    const describe = { model: 'artgen', derived: { action: 'describe' } };
    const imagine = { model: 'artgen', derived: { action: 'imagine' } };
    expect(pollDelayMs('artgen', { scale: 1, random: () => 0.999 }, describe)).toBeLessThanOrEqual(1000);
    expect(pollDelayMs('artgen', { scale: 1, random: () => 0 }, imagine)).toBeGreaterThanOrEqual(2000);
  });
});
