import { backoffDelayMs } from './retry-policy';

describe('backoffDelayMs', () => {
  it('doubles the step per attempt, between half and full step', () => {
    expect(backoffDelayMs(1, { baseMs: 1000, random: () => 0 })).toBe(500);
    expect(backoffDelayMs(1, { baseMs: 1000, random: () => 0.999999 })).toBe(1000);
    expect(backoffDelayMs(3, { baseMs: 1000, random: () => 0 })).toBe(2000);
  });
  it('never exceeds the maximum, even for huge attempt numbers', () => {
    expect(backoffDelayMs(1000, { baseMs: 1000, maxMs: 60_000, random: () => 0.999999 })).toBeLessThanOrEqual(60_000);
  });
});
