/**
 * Counters the services export on GET /metrics (libs/observability): worker steps (`gmg_upstream_requests_total`
 * by operation: one submit or one poll of the upstream per step) and settlements (`gmg_settlements_total`). A
 * replaced process starts again from 0; `Monotonic` adds what its predecessor had counted. The same text gives the
 * workers' poll lateness histogram (./lateness.ts). Both are read with @gmg/observability's text readers
 * (sumSamples, parseHistogram).
 */
/** A process's /metrics text; `undefined` when it does not answer (killed, restarting) within 3 s. */
export async function metricsText(url: string): Promise<string | undefined> {
  const r = await fetch(url, { signal: AbortSignal.timeout(3000) }).catch(() => undefined);
  if (!r?.ok) return undefined;
  return r.text().catch(() => undefined);
}

export class Monotonic {
  private readonly last = new Map<string, number>();
  private readonly offset = new Map<string, number>();

  /** The counter of `key` as if its process had never restarted (a reading below the last one = a new process). */
  add(key: string, reading: number | undefined): number {
    const prev = this.last.get(key) ?? 0;
    let off = this.offset.get(key) ?? 0;
    if (reading === undefined) return off + prev;
    if (reading < prev) {
      off += prev;
      this.offset.set(key, off);
    }
    this.last.set(key, reading);
    return off + reading;
  }
}
