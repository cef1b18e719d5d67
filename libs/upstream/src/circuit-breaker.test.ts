import { CircuitBreaker } from './circuit-breaker';

function setup(threshold = 3, cooldownMs = 1000) {
  let t = 0;
  const breaker = new CircuitBreaker({ failureThreshold: threshold, cooldownMs, now: () => t });
  return { breaker, advance: (ms: number) => (t += ms) };
}

describe('CircuitBreaker', () => {
  it('stays closed below the failure threshold', () => {
    const { breaker } = setup(3);
    breaker.recordFailure('c');
    breaker.recordFailure('c');
    expect(breaker.state('c')).toBe('closed');
    expect(breaker.isAvailable('c')).toBe(true);
  });

  it('opens after consecutive failures and refuses calls during the cool-down', () => {
    const { breaker, advance } = setup(3, 1000);
    for (let i = 0; i < 3; i++) breaker.recordFailure('c');
    expect(breaker.state('c')).toBe('open');
    expect(breaker.tryAcquire('c')).toBe(false);
    advance(999);
    expect(breaker.isAvailable('c')).toBe(false);
  });

  it('a success resets the failure count', () => {
    const { breaker } = setup(3);
    breaker.recordFailure('c');
    breaker.recordFailure('c');
    breaker.recordSuccess('c');
    breaker.recordFailure('c');
    breaker.recordFailure('c');
    expect(breaker.state('c')).toBe('closed');
  });

  it('after the cool-down lets exactly one trial through (half-open)', () => {
    const { breaker, advance } = setup(1, 1000);
    breaker.recordFailure('c');
    advance(1000);
    expect(breaker.state('c')).toBe('half_open');
    expect(breaker.tryAcquire('c')).toBe(true);
    expect(breaker.tryAcquire('c')).toBe(false);
    expect(breaker.isAvailable('c')).toBe(false);
  });

  it('closes when the trial succeeds', () => {
    const { breaker, advance } = setup(1, 1000);
    breaker.recordFailure('c');
    advance(1000);
    breaker.tryAcquire('c');
    breaker.recordSuccess('c');
    expect(breaker.state('c')).toBe('closed');
    expect(breaker.tryAcquire('c')).toBe(true);
  });

  it('re-opens for a full cool-down when the trial fails', () => {
    const { breaker, advance } = setup(5, 1000);
    for (let i = 0; i < 5; i++) breaker.recordFailure('c');
    advance(1000);
    expect(breaker.tryAcquire('c')).toBe(true);
    breaker.recordFailure('c');
    expect(breaker.state('c')).toBe('open');
    advance(999);
    expect(breaker.isAvailable('c')).toBe(false);
    advance(1);
    expect(breaker.isAvailable('c')).toBe(true);
  });

  it('frees a trial slot whose outcome never came back after a cool-down', () => {
    const { breaker, advance } = setup(1, 1000);
    breaker.recordFailure('c');
    advance(1000);
    expect(breaker.tryAcquire('c')).toBe(true);
    advance(1000);
    expect(breaker.tryAcquire('c')).toBe(true);
  });

  it('keeps channels independent', () => {
    const { breaker } = setup(1);
    breaker.recordFailure('a');
    expect(breaker.isAvailable('a')).toBe(false);
    expect(breaker.isAvailable('b')).toBe(true);
  });
});
