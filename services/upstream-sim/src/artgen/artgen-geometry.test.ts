import { baseTile, blendRatio, fit, panned, requestRatio, SINGLE_LIMIT, TILE_LIMIT, upscaled, zoomed } from './artgen-geometry';
import { describeDelayMs, describePrompts, describeText } from './artgen-describe';

describe('art canvas rules', () => {
  it('takes the ratio from the --ar flag first, then size, defaulting to 1:1', () => {
    expect(requestRatio('16:9', '1:1')).toBeCloseTo(16 / 9);
    expect(requestRatio('2:3', undefined)).toBeCloseTo(2 / 3);
    expect(requestRatio(undefined, '3:2')).toBeCloseTo(1.5);
    expect(requestRatio(undefined, 'wide')).toBe(1);
    expect(requestRatio(undefined, '100:1')).toBe(4);
  });

  it('gives 1:1 tiles of 512 x 512 and keeps other ratios near that area on multiples of 8', () => {
    expect(baseTile(1)).toEqual({ w: 512, h: 512 });
    const t = baseTile(16 / 9);
    expect((t.w % 8) + (t.h % 8)).toBe(0);
    expect(Math.abs(t.w * t.h - 512 * 512) / (512 * 512)).toBeLessThan(0.02);
  });

  it('maps blend dimensions, refusing unknown ones', () => {
    expect(blendRatio('PORTRAIT')).toBeCloseTo(2 / 3);
    expect(blendRatio(undefined)).toBe(1);
    expect(blendRatio('WIDE')).toBeUndefined();
  });

  it('chained pans keep widening by half the height; vertical pans add half the width', () => {
    let s = { w: 1024, h: 1024 };
    const widths = [];
    for (let i = 0; i < 5; i++) widths.push((s = panned(s, i % 2 ? 'right' : 'left')).w);
    expect(widths).toEqual([1536, 2048, 2560, 3072, 3584]);
    expect(panned({ w: 1024, h: 512 }, 'down')).toEqual({ w: 1024, h: 1024 });
  });

  it('never grows past the limits, keeping the ratio', () => {
    const huge = fit({ w: 20_000, h: 10_000 }, SINGLE_LIMIT);
    expect(huge.w).toBeLessThanOrEqual(SINGLE_LIMIT.side);
    expect(huge.w * huge.h).toBeLessThanOrEqual(SINGLE_LIMIT.pixels);
    expect(huge.w / huge.h).toBeCloseTo(2, 2);
    const z = zoomed({ w: 4096, h: 4096 }, 2);
    expect(z.w * z.h).toBeLessThanOrEqual(TILE_LIMIT.pixels);
    expect(upscaled({ w: 512, h: 512 })).toEqual({ w: 1024, h: 1024 });
  });
});

describe('describe text', () => {
  it('gives four distinct prompts, numbered and blank-line separated, deterministic per input', () => {
    const p = describePrompts(['https://x.test/a.png']);
    expect(new Set(p).size).toBe(4);
    expect(describePrompts(['https://x.test/a.png'])).toEqual(p);
    expect(describeText(p).split('\n\n')).toHaveLength(4);
    expect(describeText(p).startsWith('1️⃣ ')).toBe(true);
  });

  it('waits 1 to 3 s times the scale', () => {
    for (const u of ['a', 'b', 'c', 'd', 'e']) {
      const d = describeDelayMs([u], 0.5);
      expect(d).toBeGreaterThanOrEqual(500);
      expect(d).toBeLessThanOrEqual(1500);
    }
  });
});
