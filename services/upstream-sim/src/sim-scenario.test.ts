import { baseDurationMs, deliveredOutput, durationMs, parseMarkers, stateAt } from './sim-scenario';

describe('parseMarkers', () => {
  it('finds no marker in a plain prompt', () => {
    expect(parseMarkers('a cat on a sofa')).toEqual({ outcome: 'success', slow: false });
    expect(parseMarkers(undefined)).toEqual({ outcome: 'success', slow: false });
  });
  it.each([
    ['x [sim:fail]', { outcome: 'fail', slow: false }],
    ['[sim:moderation] y', { outcome: 'moderation', slow: false }],
    ['[sim:never]', { outcome: 'never', slow: false }],
    ['[sim:slow] dog', { outcome: 'success', slow: true }],
    ['[sim:error503]', { outcome: 'success', slow: false, submit503: 'always' }],
    ['[sim:error503once]', { outcome: 'success', slow: false, submit503: 'once' }],
    ['[sim:slow][sim:fail]', { outcome: 'fail', slow: true }],
  ])('%s → %j', (prompt, expected) => {
    expect(parseMarkers(prompt)).toEqual(expected);
  });
});

describe('durations', () => {
  it('keeps images within 2-3 s and videos within 6-10 s at scale 1', () => {
    for (const est of [0, 20, 60, 600]) {
      expect(baseDurationMs('images', est)).toBeGreaterThanOrEqual(2000);
      expect(baseDurationMs('images', est)).toBeLessThanOrEqual(3000);
      expect(baseDurationMs('videos', est)).toBeGreaterThanOrEqual(6000);
      expect(baseDurationMs('videos', est)).toBeLessThanOrEqual(10_000);
    }
  });
  it('scales by the time scale and by ten for [sim:slow]', () => {
    const m = parseMarkers('x');
    expect(durationMs('images', 0, m, 0.05)).toBe(100);
    expect(durationMs('images', 0, { ...m, slow: true }, 0.05)).toBe(1000);
  });
});

describe('stateAt', () => {
  const t = (outcome: 'success' | 'fail' | 'moderation' | 'never') => ({ startedAt: 1000, durationMs: 1000, outcome });

  it('is pending at first, then processing with rising progress, then completed at the duration', () => {
    expect(stateAt(t('success'), 1000)).toEqual({ status: 'pending', progress: 0 });
    const a = stateAt(t('success'), 1300);
    const b = stateAt(t('success'), 1800);
    expect(a.status).toBe('processing');
    expect(b.status).toBe('processing');
    expect(b.progress).toBeGreaterThan(a.progress);
    expect(b.progress).toBeLessThan(100);
    expect(stateAt(t('success'), 2000)).toEqual({ status: 'completed', progress: 100, endedAt: 2000 });
  });

  it('fails a [sim:fail] task part way, and a moderation one earlier', () => {
    expect(stateAt(t('fail'), 1600).status).toBe('processing');
    expect(stateAt(t('fail'), 1700)).toMatchObject({ status: 'failed', endedAt: 1700 });
    expect(stateAt(t('moderation'), 1300)).toMatchObject({ status: 'failed', endedAt: 1300 });
  });

  it('never finishes a [sim:never] task, with progress below 100', () => {
    const s = stateAt(t('never'), 1000 + 3600_000);
    expect(s.status).toBe('processing');
    expect(s.progress).toBeLessThanOrEqual(95);
  });
});

describe('[sim:partial]', () => {
  it('delivers half the images (at least one) and half the video seconds (at least 1), nothing less without the marker', () => {
    const partial = parseMarkers('x [sim:partial]');
    expect(partial.partial).toBe(true);
    expect(deliveredOutput({ kind: 'images', count: 4 }, partial).count).toBe(2);
    expect(deliveredOutput({ kind: 'images', count: 1 }, partial).count).toBe(1);
    expect(deliveredOutput({ kind: 'videos', count: 1, durationSeconds: 10 }, partial).durationSeconds).toBe(5);
    expect(deliveredOutput({ kind: 'videos', count: 1, durationSeconds: 1 }, partial).durationSeconds).toBe(1);
    expect(deliveredOutput({ kind: 'images', count: 4 }, parseMarkers('x')).count).toBe(4);
  });
});
