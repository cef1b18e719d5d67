import type { DataSource } from 'typeorm';
import type { Pool } from '@gmg/contracts';
import type { Row } from './sql';

const OPEN = `status IN ('pending','processing')`;

/**
 * The sweeps' reads: ids only (a sweep loads no request blob, no result), one keyset page at a time (id order
 * after `afterId`), so a sweep reaches every row however many there are and one page costs the same as the next.
 * Each read is served by a partial index (open tasks by deadline, unsettled terminal tasks by completion): the cost
 * follows the backlog, not the history.
 */
export class TaskRecoveryRepository {
  constructor(private readonly ds: Pick<DataSource, 'query'>) {}

  /** Open tasks of a pool past their deadline (the timeout sweep fails them). */
  async overdueIds(pool: Pool, limit: number, afterId?: string): Promise<string[]> {
    return this.ids(
      `SELECT id FROM tasks WHERE ${OPEN} AND deadline_at < now() AND pool = $1
         AND ($3::text IS NULL OR id > $3::text)
       ORDER BY id LIMIT $2`,
      [pool, limit, afterId ?? null],
    );
  }

  /**
   * Open tasks of a pool untouched for `untouchedForMs` (0: every open task, the rebuild after a Redis loss):
   * the sweep checks each for a live job.
   */
  async openIds(pool: Pool, untouchedForMs: number, limit: number, afterId?: string): Promise<string[]> {
    return this.ids(
      `SELECT id FROM tasks WHERE ${OPEN} AND pool = $1
         AND updated_at <= now() - ($2 || ' milliseconds')::interval
         AND ($4::text IS NULL OR id > $4::text)
       ORDER BY id LIMIT $3`,
      [pool, String(untouchedForMs), limit, afterId ?? null],
    );
  }

  /** Terminal tasks with neither capture nor release, ended at least `olderThanMs` ago (the billing sweep). */
  async unsettledIds(olderThanMs: number, limit: number, afterId?: string): Promise<string[]> {
    return this.ids(
      `SELECT id FROM tasks
       WHERE settled_at IS NULL AND status IN ('completed','failed')
         AND completed_at <= now() - ($1 || ' milliseconds')::interval
         AND ($3::text IS NULL OR id > $3::text)
       ORDER BY id LIMIT $2`,
      [String(olderThanMs), limit, afterId ?? null],
    );
  }

  private async ids(sql: string, params: unknown[]): Promise<string[]> {
    const rows: Row[] = await this.ds.query(sql, params);
    return rows.map((r) => r.id as string);
  }
}
