import { pickChannel, selectChannel, type ChannelGate } from './channel-selector';

const ch = (id: string, priority: number, weight: number) => ({ id, priority, weight });
const seq = (...values: number[]) => {
  let i = 0;
  return () => values[i++ % values.length];
};

describe('selectChannel', () => {
  it('returns undefined when there are no candidates', () => {
    expect(selectChannel([])).toBeUndefined();
  });

  it('prefers the highest priority even when a lower one has more weight', () => {
    const got = selectChannel([ch('low', 0, 100), ch('high', 10, 1)], { random: () => 0.99 });
    expect(got?.id).toBe('high');
  });

  it('splits equal priorities by weight (random point falls in the weight band)', () => {
    const cands = [ch('a', 1, 1), ch('b', 1, 3)];
    expect(selectChannel(cands, { random: () => 0.2 })?.id).toBe('a'); // 0.8 of 4 < 1
    expect(selectChannel(cands, { random: () => 0.3 })?.id).toBe('b'); // 1.2 of 4 >= 1
    expect(selectChannel(cands, { random: () => 0.999 })?.id).toBe('b');
  });

  it('approximates the weight ratio over many picks', () => {
    const cands = [ch('a', 1, 1), ch('b', 1, 3)];
    let state = 42;
    const lcg = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const counts = { a: 0, b: 0 } as Record<string, number>;
    for (let i = 0; i < 4000; i++) counts[selectChannel(cands, { random: lcg })!.id]++;
    expect(counts.b / counts.a).toBeGreaterThan(2.5);
    expect(counts.b / counts.a).toBeLessThan(3.5);
  });

  it('skips excluded channels and falls to the next priority', () => {
    const got = selectChannel([ch('p1', 5, 1), ch('p2', 1, 1)], { exclude: ['p1'] });
    expect(got?.id).toBe('p2');
  });

  it('skips channels whose circuit is open', () => {
    const got = selectChannel([ch('p1', 5, 1), ch('p2', 1, 1)], { isOpen: (id) => id === 'p1' });
    expect(got?.id).toBe('p2');
  });

  it('returns undefined when every candidate is excluded or open', () => {
    expect(selectChannel([ch('a', 1, 1), ch('b', 1, 1)], { exclude: ['a'], isOpen: () => true })).toBeUndefined();
  });

  it('never picks a weight-0 channel while a positive-weight channel is eligible, even at lower priority', () => {
    const got = selectChannel([ch('standby', 10, 0), ch('live', 0, 1)], { random: () => 0 });
    expect(got?.id).toBe('live');
  });

  it('uses weight-0 channels when they are the only option, evenly among the top priority', () => {
    const cands = [ch('s1', 3, 0), ch('s2', 3, 0), ch('s3', 1, 0)];
    expect(selectChannel(cands, { random: () => 0.1 })?.id).toBe('s1');
    expect(selectChannel(cands, { random: () => 0.9 })?.id).toBe('s2');
  });
});

describe('pickChannel', () => {
  it('re-chooses when the chosen channel half-open trial is already taken', () => {
    const gate: ChannelGate = { isAvailable: () => true, tryAcquire: (id) => id !== 'a' };
    const got = pickChannel([ch('a', 5, 1), ch('b', 1, 1)], gate, { random: seq(0) });
    expect(got?.id).toBe('b');
  });

  it('returns undefined when no channel can be acquired', () => {
    const gate: ChannelGate = { isAvailable: () => true, tryAcquire: () => false };
    expect(pickChannel([ch('a', 5, 1), ch('b', 1, 1)], gate)).toBeUndefined();
  });
});
