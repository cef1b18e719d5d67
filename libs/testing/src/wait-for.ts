import { inspect } from 'node:util';

/** Polls `fn` until it returns a truthy value or the deadline passes. Never a fixed sleep. */
export async function waitFor<T>(
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  const interval = opts.intervalMs ?? 50;
  let last: unknown;
  for (let i = 0; i < 100_000; i++) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, interval));
  }
  // a thrown non-Error is inspected: String() of an object says only `[object Object]`
  const shown = last instanceof Error ? String(last) : inspect(last);
  throw new Error(`timed out waiting for ${opts.what ?? 'condition'}${last ? `: ${shown}` : ''}`);
}
