/** Ids one sweep page reads. */
export const SWEEP_PAGE_SIZE = 500;

export interface IdPageWalk {
  /** Ids handed to `each`. */
  seen: number;
  /** The last id handed over (where a later walk resumes), undefined when none was. */
  lastId: string | undefined;
  /** True when the walk reached the end of the ids (a short page), false when it stopped at `maxRows`. */
  done: boolean;
}

const idOf = (row: string | { id: string }): string => (typeof row === 'string' ? row : row.id);

/**
 * Runs `each` over keyset pages of ids, or of rows with an id (`fetch(limit, afterId)` in id order), starting after
 * `startAfter` (or the first id), until a short page or `maxRows` rows: bounded in rows and therefore in time. Every
 * sweep of the gateway (pools, billing) walks its rows with it.
 */
export async function forEachIdPage<T extends string | { id: string }>(
  fetch: (limit: number, afterId: string | undefined) => Promise<T[]>,
  maxRows: number,
  each: (rows: T[]) => Promise<void>,
  startAfter?: string,
): Promise<IdPageWalk> {
  let afterId = startAfter;
  let seen = 0;
  let lastId: string | undefined;
  while (seen < maxRows) {
    const limit = Math.min(SWEEP_PAGE_SIZE, maxRows - seen);
    const ids = await fetch(limit, afterId);
    if (ids.length) {
      await each(ids);
      lastId = idOf(ids[ids.length - 1]!);
    }
    seen += ids.length;
    if (ids.length < limit) return { seen, lastId, done: true };
    afterId = lastId;
  }
  return { seen, lastId, done: false };
}
