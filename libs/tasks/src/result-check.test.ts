import { hasExpectedResult } from './result-check';

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
