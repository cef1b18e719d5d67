import { Counter, Histogram, Registry } from 'prom-client';
import { addHistograms, diffHistograms, histogramQuantile, parseHistogram, shareAtMost, sumSamples } from './histogram-text';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2, 5, 10, 30];

/** A process's /metrics: its own registry, the lateness histogram (pools as label sets), default labels like a service's. */
function proc(service: string): { reg: Registry; h: Histogram<'pool'> } {
  const reg = new Registry();
  reg.setDefaultLabels({ service });
  const h = new Histogram({ name: 'gmg_poll_lateness_seconds', help: 'lateness', labelNames: ['pool'] as const, buckets: BUCKETS, registers: [reg] });
  // a histogram whose name the lateness one starts with must not be read with it
  new Histogram({ name: 'gmg_poll_lateness_seconds_other', help: 'x', buckets: [1], registers: [reg] }).observe(0.5);
  return { reg, h };
}

describe('parseHistogram (prom-client text)', () => {
  it('reads the cumulative buckets, sums label sets, and ignores other metrics', async () => {
    const { reg, h } = proc('worker-image');
    for (const v of [0.001, 0.02, 0.02, 0.3]) h.observe({ pool: 'image' }, v);
    h.observe({ pool: 'video' }, 1.5);
    h.observe({ pool: 'video' }, 40);
    const b = parseHistogram(await reg.metrics(), 'gmg_poll_lateness_seconds');
    expect(b.le).toEqual([...BUCKETS, Infinity]);
    expect(b.count).toBe(6);
    expect(b.cum[b.le.indexOf(0.005)]).toBe(1);
    expect(b.cum[b.le.indexOf(0.025)]).toBe(3);
    expect(b.cum[b.le.indexOf(1)]).toBe(4);
    expect(b.cum[b.le.indexOf(2)]).toBe(5);
    expect(b.cum[b.le.indexOf(30)]).toBe(5);
    expect(shareAtMost(b, 1)).toBeCloseTo(4 / 6);
    expect(shareAtMost(b, 0.3)).toBeNaN(); // not a bound: no exact share
  });

  it('is empty when the process has observed nothing (prom-client prints no sample)', async () => {
    const { reg } = proc('worker-image');
    const b = parseHistogram(await reg.metrics(), 'gmg_poll_lateness_seconds');
    expect(b).toEqual({ le: [], cum: [], count: 0 });
    expect(histogramQuantile(b, 0.5)).toBeNaN();
    expect(shareAtMost(b, 1)).toBeNaN();
  });

  it('reads a label value holding a brace, a comma and an escaped quote', () => {
    const text = 'x_bucket{route="/a/{id},\\"b\\"",le="0.5"} 3\nx_bucket{route="/a/{id},\\"b\\"",le="+Inf"} 4 1764000000000\n';
    expect(parseHistogram(text, 'x')).toEqual({ le: [0.5, Infinity], cum: [3, 4], count: 4 });
  });
});

describe('adding, diffing and quantiles', () => {
  it('sums two processes, diffs two snapshots, and interpolates within a bucket like histogram_quantile', async () => {
    const a = proc('worker-image');
    const b = proc('worker-video');
    a.h.observe({ pool: 'image' }, 0.03); // before the window
    const before = addHistograms(
      parseHistogram(await a.reg.metrics(), 'gmg_poll_lateness_seconds'),
      parseHistogram(await b.reg.metrics(), 'gmg_poll_lateness_seconds'),
    );
    // the window: 100 polls, 50 of them in (0.05, 0.1], 49 in (0.1, 0.25], 1 in (1, 2]
    for (let i = 0; i < 50; i++) a.h.observe({ pool: 'image' }, 0.07);
    for (let i = 0; i < 49; i++) b.h.observe({ pool: 'video' }, 0.2);
    b.h.observe({ pool: 'video' }, 1.5);
    const after = addHistograms(
      parseHistogram(await a.reg.metrics(), 'gmg_poll_lateness_seconds'),
      parseHistogram(await b.reg.metrics(), 'gmg_poll_lateness_seconds'),
    );
    const w = diffHistograms(after, before);
    expect(w.count).toBe(100);
    // rank 50 is the last of the (0.05, 0.1] bucket: its upper bound
    expect(histogramQuantile(w, 0.5)).toBeCloseTo(0.1);
    // rank 25: halfway through (0.05, 0.1]
    expect(histogramQuantile(w, 0.25)).toBeCloseTo(0.075);
    // rank 99: the last of (0.1, 0.25]
    expect(histogramQuantile(w, 0.99)).toBeCloseTo(0.25);
    // rank 99.5: halfway into (1, 2] (one observation there)
    expect(histogramQuantile(w, 0.995)).toBeCloseTo(1.5);
    expect(shareAtMost(w, 1)).toBeCloseTo(0.99);
  });

  it('answers the largest finite bound for a quantile in the +Inf bucket', () => {
    const h = { le: [1, 2, Infinity], cum: [1, 1, 4], count: 4 };
    expect(histogramQuantile(h, 0.99)).toBe(2);
  });

  it("adds histograms whose bounds differ using each one's count at the largest bound below", () => {
    const sum = addHistograms({ le: [1, Infinity], cum: [2, 3], count: 3 }, { le: [0.5, 1, 2, Infinity], cum: [1, 1, 2, 2], count: 2 });
    expect(sum).toEqual({ le: [0.5, 1, 2, Infinity], cum: [1, 3, 4, 5], count: 5 });
  });
});

describe('sumSamples (prom-client text)', () => {
  it('sums a counter over its label sets, or over those with one label value, and no other metric', async () => {
    const reg = new Registry();
    const c = new Counter({ name: 'gmg_upstream_requests_total', help: 'x', labelNames: ['operation', 'channel'] as const, registers: [reg] });
    new Counter({ name: 'gmg_upstream_requests_total_other', help: 'x', registers: [reg] }).inc(100);
    c.inc({ operation: 'poll', channel: 'a' }, 3);
    c.inc({ operation: 'poll', channel: 'b' }, 4);
    c.inc({ operation: 'submit', channel: 'a' }, 5);
    const text = await reg.metrics();
    expect(sumSamples(text, 'gmg_upstream_requests_total')).toBe(12);
    expect(sumSamples(text, 'gmg_upstream_requests_total', { name: 'operation', value: 'poll' })).toBe(7);
    expect(sumSamples(text, 'gmg_absent_total')).toBeUndefined();
  });
});
