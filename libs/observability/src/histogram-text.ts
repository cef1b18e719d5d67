/**
 * A Prometheus histogram read back from the text exposition format (what GET /metrics answers): the cumulative
 * `<name>_bucket{…,le="…"} N` samples, summed over every label set (pools, services) and, with `addHistograms`, over
 * processes; the difference of two readings is the window between them. Quantiles are interpolated linearly within a
 * bucket, as Prometheus's histogram_quantile does. Counters and gauges: sumSamples. Used by bench/worker.bench.ts
 * and the fleet run (scripts/fleet).
 */

/** The samples of `metric` (every label set, or those with `label`: one or several, all present) summed; `undefined` when there is none. */
export function sumSamples(
  text: string,
  metric: string,
  label?: { name: string; value: string } | ReadonlyArray<{ name: string; value: string }>,
): number | undefined {
  type Label = { name: string; value: string };
  const labels: readonly Label[] = label === undefined ? [] : 'name' in label ? [label as Label] : (label as readonly Label[]);
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    // the name itself, not a longer one that starts with it (`x_total` vs `x_total_other`)
    if (!line.startsWith(metric) || (line[metric.length] !== '{' && line[metric.length] !== ' ')) continue;
    if (!labels.every((l) => line.includes(`${l.name}="${l.value}"`))) continue;
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(v)) sum = (sum ?? 0) + v;
  }
  return sum;
}

/** Cumulative counts at each upper bound `le` (ascending; the last one +Inf when the text has it). */
export interface HistogramBuckets {
  le: number[];
  cum: number[];
  /** Observations in all (the +Inf bucket's count). */
  count: number;
}

export const emptyHistogram = (): HistogramBuckets => ({ le: [], cum: [], count: 0 });

/** `name_bucket{labels} value` (a label value may hold `}`, `,` or an escaped quote; an optional timestamp after). */
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[^"}]|"(?:[^"\\]|\\.)*")*)\}\s+(\S+)/;
const LE = /(?:^|,)\s*le="([^"]*)"/;

function make(byLe: Map<number, number>): HistogramBuckets {
  const le = [...byLe.keys()].sort((a, b) => a - b);
  const cum = le.map((b) => byLe.get(b)!);
  return { le, cum, count: cum[cum.length - 1] ?? 0 };
}

/** The buckets of histogram `name` in a /metrics text, summed over its label sets; none: an empty histogram. */
export function parseHistogram(text: string, name: string): HistogramBuckets {
  const bucket = `${name}_bucket`;
  const byLe = new Map<number, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(bucket)) continue;
    const m = SAMPLE.exec(line);
    if (!m || m[1] !== bucket) continue;
    const le = LE.exec(m[2]!)?.[1];
    const v = Number(m[3]);
    if (le === undefined || !Number.isFinite(v)) continue;
    const bound = le === '+Inf' ? Infinity : Number(le);
    if (Number.isNaN(bound)) continue;
    byLe.set(bound, (byLe.get(bound) ?? 0) + v);
  }
  return make(byLe);
}

/** Observations ≤ x: the count at the largest bound ≤ x (exact on a bound; a lower bound between two). */
function cumAt(h: HistogramBuckets, x: number): number {
  let c = 0;
  for (let i = 0; i < h.le.length && h.le[i]! <= x; i++) c = h.cum[i]!;
  return c;
}

function combine(a: HistogramBuckets, b: HistogramBuckets, sign: 1 | -1): HistogramBuckets {
  const byLe = new Map<number, number>();
  for (const le of new Set([...a.le, ...b.le])) byLe.set(le, cumAt(a, le) + sign * cumAt(b, le));
  return make(byLe);
}

/** Two histograms as one (two processes, two label sets); processes of one build share the bounds. */
export function addHistograms(a: HistogramBuckets, b: HistogramBuckets): HistogramBuckets {
  return combine(a, b, 1);
}

/** What `later` counted since `earlier` (two readings of the same counters; a process restarted in between is the caller's to handle). */
export function diffHistograms(later: HistogramBuckets, earlier: HistogramBuckets): HistogramBuckets {
  return combine(later, earlier, -1);
}

/**
 * The q-quantile (0 ≤ q ≤ 1), linear within its bucket from the bound below (0 for the first bucket); in the +Inf
 * bucket, the largest finite bound (Prometheus's rule). NaN with no observations.
 */
export function histogramQuantile(h: HistogramBuckets, q: number): number {
  if (h.count <= 0) return NaN;
  const rank = q * h.count;
  for (let i = 0; i < h.le.length; i++) {
    if (h.cum[i]! < rank) continue;
    const lo = i === 0 ? 0 : h.le[i - 1]!;
    const below = i === 0 ? 0 : h.cum[i - 1]!;
    if (!Number.isFinite(h.le[i]!)) return lo;
    return lo + (h.le[i]! - lo) * ((rank - below) / Math.max(1, h.cum[i]! - below));
  }
  return NaN;
}

/** The share of observations ≤ `bound`, exact when `bound` is one of the bucket bounds; NaN otherwise or when empty. */
export function shareAtMost(h: HistogramBuckets, bound: number): number {
  const i = h.le.indexOf(bound);
  return h.count <= 0 || i < 0 ? NaN : h.cum[i]! / h.count;
}
