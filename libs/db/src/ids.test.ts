import fc from 'fast-check';
import { newApiKeySecret, newTaskId, randomBase62, randomHex, timePrefix36 } from './ids';

describe('random ids', () => {
  it('task ids and key secrets have their format and never repeat (20,000 of each, across many pool refills)', () => {
    const ids = new Set(Array.from({ length: 20_000 }, newTaskId));
    expect(ids.size).toBe(20_000);
    for (const id of ids) expect(id).toMatch(/^task_[0-9a-z]{9}[0-9A-Za-z]{15}$/);
    const secrets = Array.from({ length: 20_000 }, newApiKeySecret);
    expect(new Set(secrets).size).toBe(20_000);
    expect(secrets.every((s) => /^sk-[0-9A-Za-z]{40}$/.test(s))).toBe(true);
  });

  it('draws every base62 character about equally often (no modulo bias, no stuck pool)', () => {
    const counts = new Map<string, number>();
    const text = Array.from({ length: 2_000 }, () => randomBase62(62)).join('');
    for (const c of text) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    const expected = text.length / 62; // 2,000
    // a chi-square over 61 degrees of freedom stays far below 200 for a uniform source (p < 1e-15 above)
    const chi2 = [...counts.values()].reduce((s, n) => s + (n - expected) ** 2 / expected, 0);
    expect(chi2).toBeLessThan(200);
  });

  it('hex ids (request ids) have their format, never repeat and share the pool without reusing its bytes', () => {
    const hex = Array.from({ length: 20_000 }, (_, i) => (i % 7 === 0 ? newTaskId() : randomHex(16)));
    const reqIds = hex.filter((h) => !h.startsWith('task_'));
    expect(reqIds.every((h) => /^[0-9a-f]{32}$/.test(h))).toBe(true);
    expect(new Set(reqIds).size).toBe(reqIds.length);
    // a request larger than the pool is served whole
    expect(randomHex(5000)).toMatch(/^[0-9a-f]{10000}$/);
    // every hex digit about equally often
    const counts = new Map<string, number>();
    for (const c of reqIds.join('')) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(16);
    const total = reqIds.length * 32;
    const chi2 = [...counts.values()].reduce((s, n) => s + (n - total / 16) ** 2 / (total / 16), 0);
    expect(chi2).toBeLessThan(80);
  });

  it('task ids start with their creation time: a later id sorts after an earlier one, bytewise and under a linguistic collation', () => {
    const collator = new Intl.Collator('en-US'); // what a Postgres database with an en_US collation compares with
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 36 ** 9 - 2 ** 40 - 1 }), fc.integer({ min: 1, max: 2 ** 40 }), (t, dt) => {
        const [a, b] = [timePrefix36(t), timePrefix36(t + dt)];
        return a.length === 9 && b.length === 9 && a < b && collator.compare(a, b) < 0;
      }),
      { numRuns: 2_000 },
    );
    const before = Date.now();
    const id = newTaskId();
    expect(id.slice(5, 14) >= timePrefix36(before) && id.slice(5, 14) <= timePrefix36(Date.now())).toBe(true);
  });
});
