/** Ids one sweep page reads. */
export const SWEEP_PAGE_SIZE = 500;

/**
 * Runs `each` over keyset pages of ids (`fetch(limit, afterId)` in id order) until a short page or `maxRows` ids:
 * bounded in rows and therefore in time; the next sweep starts over from the first id.
 */
export async function forEachIdPage(
  fetch: (limit: number, afterId: string | undefined) => Promise<string[]>,
  maxRows: number,
  each: (ids: string[]) => Promise<void>,
): Promise<number> {
  let afterId: string | undefined;
  let seen = 0;
  while (seen < maxRows) {
    const limit = Math.min(SWEEP_PAGE_SIZE, maxRows - seen);
    const ids = await fetch(limit, afterId);
    if (ids.length) await each(ids);
    seen += ids.length;
    if (ids.length < limit) break;
    afterId = ids[ids.length - 1];
  }
  return seen;
}
