import { deliveredCapture, hasExpectedResult } from './result-check';

describe('hasExpectedResult', () => {
  it('accepts an image task with image urls', () => {
    expect(hasExpectedResult({ kind: 'images', count: 1 }, { images: [{ url: 'https://x/1.jpg' }] })).toBe(true);
  });
  it('refuses a completion without its output: nothing, an empty list, the wrong kind, a url that is not a string', () => {
    expect(hasExpectedResult({ kind: 'images', count: 1 }, undefined)).toBe(false);
    expect(hasExpectedResult({ kind: 'images', count: 1 }, {})).toBe(false);
    expect(hasExpectedResult({ kind: 'images', count: 1 }, { images: [] })).toBe(false);
    expect(hasExpectedResult({ kind: 'videos', count: 1 }, { images: [{ url: 'https://x/1.jpg' }] })).toBe(false);
    expect(hasExpectedResult({ kind: 'videos', count: 1 }, { videos: [{ url: 'https://x/1.mp4' as never, expires_at: 1 }] })).toBe(false);
  });
  it('accepts a video task whose url is an array, and any output when nothing was expected (base contracts)', () => {
    expect(hasExpectedResult({ kind: 'videos', count: 1 }, { videos: [{ url: ['https://x/1.mp4'], expires_at: 1 }] })).toBe(true);
    expect(hasExpectedResult(undefined, { videos: [{ url: ['https://x/1.mp4'], expires_at: 1 }] })).toBe(true);
    expect(hasExpectedResult(undefined, {})).toBe(false);
  });
});

describe('deliveredCapture', () => {
  const img = (n: number) => ({ images: Array.from({ length: n }, (_, i) => ({ url: `https://x/${i}.png` })) });
  const video = (duration?: number) => ({ videos: [{ url: ['https://x/1.mp4'], expires_at: 1, ...(duration === undefined ? {} : { duration }) }] });

  it('charges images for the share delivered, rounded down: 3 of 4 of 1001 → 750', () => {
    expect(deliveredCapture(4000n, { kind: 'images', count: 4 }, img(1))).toBe(1000n);
    expect(deliveredCapture(1001n, { kind: 'images', count: 4 }, img(3))).toBe(750n);
  });
  it('captures the whole hold (undefined) when every image came, or more than asked, or one was asked', () => {
    expect(deliveredCapture(4000n, { kind: 'images', count: 4 }, img(4))).toBeUndefined();
    expect(deliveredCapture(4000n, { kind: 'images', count: 4 }, img(5))).toBeUndefined();
    expect(deliveredCapture(1000n, { kind: 'images', count: 1 }, img(1))).toBeUndefined();
  });
  it('charges a shorter video by started seconds: 4 s of 8 s billed → half; 3.2 s → 4 s; 7.96 s counts as 8 s', () => {
    const e = { kind: 'videos' as const, count: 1, durationSeconds: 8 };
    expect(deliveredCapture(8000n, e, video(4))).toBe(4000n);
    expect(deliveredCapture(8000n, e, video(3.2))).toBe(4000n);
    expect(deliveredCapture(8000n, e, video(7.96))).toBeUndefined();
  });
  it('takes a video without a usable duration, or a billed length it met, as complete', () => {
    const e = { kind: 'videos' as const, count: 1, durationSeconds: 5 };
    expect(deliveredCapture(5000n, e, video())).toBeUndefined();
    expect(deliveredCapture(5000n, e, video(Number.NaN))).toBeUndefined();
    expect(deliveredCapture(5000n, e, video(0))).toBeUndefined();
    expect(deliveredCapture(5000n, e, video(6))).toBeUndefined();
    expect(deliveredCapture(5000n, { kind: 'videos', count: 1 }, video(2))).toBeUndefined();
  });
});
