import { nextPollDelay } from './wait';

const base = { minMs: 1000, maxMs: 15_000 };

describe('nextPollDelay (backoff guided by estimated_time)', () => {
  it('polls about eight times over the estimate while within it', () => {
    expect(nextPollDelay({ ...base, estimatedSeconds: 20, elapsedMs: 0, previousMs: 0 })).toBe(2500);
    expect(nextPollDelay({ ...base, estimatedSeconds: 240, elapsedMs: 10_000, previousMs: 15_000 })).toBe(15_000);
    // a short task: never below the minimum
    expect(nextPollDelay({ ...base, estimatedSeconds: 3, elapsedMs: 0, previousMs: 0 })).toBe(1000);
  });

  it('does not sleep far past the estimate', () => {
    expect(nextPollDelay({ ...base, estimatedSeconds: 20, elapsedMs: 19_000, previousMs: 2500 })).toBe(2000);
  });

  it('backs off by 1.5x once past the estimate, up to the maximum', () => {
    expect(nextPollDelay({ ...base, estimatedSeconds: 20, elapsedMs: 21_000, previousMs: 2000 })).toBe(3000);
    expect(nextPollDelay({ ...base, estimatedSeconds: 20, elapsedMs: 300_000, previousMs: 12_000 })).toBe(15_000);
  });

  it('without an estimate starts at the minimum and backs off', () => {
    expect(nextPollDelay({ ...base, elapsedMs: 0, previousMs: 0 })).toBe(1000);
    expect(nextPollDelay({ ...base, elapsedMs: 1000, previousMs: 1000 })).toBe(1500);
  });
});
