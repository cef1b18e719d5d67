import { TASK_FAILURE_TYPES, TASK_TIMEOUT_MESSAGE, taskJobId, type Pool, type TaskJobData } from '@gmg/contracts';
import type { TaskRecord, TaskRepository } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import type { Redis, TaskQueue } from '@gmg/queue';
import type { TaskLifecycle } from './task-lifecycle';

export interface PoolSweepResult {
  timedOut: number;
  readded: number;
}

const PAGE_SIZE = 500;
/** 200 pages × 500: up to 100,000 open tasks checked per sweep. */
const MAX_PAGES = 200;

/** Job states in which a job still drives its task; anything else (failed, completed, gone) leaves the task orphaned. */
const LIVE_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

/**
 * The periodic `sweep` job of a pool (one job scheduler across all replicas):
 * (a) open tasks past their deadline fail with `Task timeout` (winners settle), so a task whose job was lost
 *     still ends and is refunded;
 * (b) open tasks without a live job get one again (jobId = taskId, so a task never has two), stepping to `poll`
 *     when the row already has an upstream id: a lost job never resubmits.
 */
export class PoolSweeper {
  constructor(
    private readonly pool: Pool,
    private readonly tasks: TaskRepository,
    private readonly lifecycle: TaskLifecycle,
    private readonly queue: TaskQueue,
    private readonly logger: Logger,
    /** A task untouched for this long is checked for a job (the edge enqueues right after its commit). */
    private readonly orphanAfterMs: number,
  ) {}

  async sweep(): Promise<PoolSweepResult> {
    let timedOut = 0;
    for (const t of await this.tasks.findOverdue(this.pool)) {
      if (await this.lifecycle.fail(t.id, TASK_TIMEOUT_MESSAGE, TASK_FAILURE_TYPES.timeout)) timedOut++;
    }
    let readded = 0;
    for await (const page of this.openTaskPages()) {
      for (const t of await this.withoutLiveJob(page)) {
        if (await this.readd(t)) readded++;
      }
    }
    if (timedOut || readded) this.logger.info({ pool: this.pool, timedOut, readded }, 'pool sweep');
    return { timedOut, readded };
  }

  /**
   * The tasks of a page whose job is not live, in one pipelined round trip: a job is live when its hash exists and
   * it is in neither the completed nor the failed set (waiting, active, delayed, prioritized). A healthy fleet of
   * in-flight tasks costs one Redis round trip per 500 tasks.
   */
  private async withoutLiveJob(page: TaskRecord[]): Promise<TaskRecord[]> {
    if (page.length === 0) return [];
    const client = (await this.queue.client) as unknown as Redis;
    const pipe = client.pipeline();
    for (const t of page) {
      const id = taskJobId(t.id);
      pipe.exists(this.queue.toKey(id));
      pipe.zscore(this.queue.toKey('completed'), id);
      pipe.zscore(this.queue.toKey('failed'), id);
    }
    const res = (await pipe.exec()) ?? [];
    return page.filter((_t, i) => {
      const [exists, completed, failed] = [res[3 * i]?.[1], res[3 * i + 1]?.[1], res[3 * i + 2]?.[1]];
      return !(exists === 1 && completed === null && failed === null);
    });
  }

  /** Re-adds the job of an open task that has none (or only a finished one); true when it did. */
  private async readd(t: TaskRecord): Promise<boolean> {
    const jobId = taskJobId(t.id);
    const job = await this.queue.getJob(jobId);
    if (job) {
      const state = await job.getState();
      if (LIVE_STATES.has(state)) return false;
      // A finished job would block re-adding under the same id; a locked one refuses removal (then skip it).
      try {
        await job.remove();
      } catch (e) {
        this.logger.warn({ taskId: t.id, state, err: (e as Error).message }, 'could not remove the finished job of an open task');
        return false;
      }
    }
    // the step machine reads the row: an upstream id there means poll, never resubmit
    const data: TaskJobData = { taskId: t.id, submitAttempts: 0, pollFailures: 0, excludedChannels: [] };
    await this.queue.add('task', data, { jobId });
    this.logger.warn({ taskId: t.id, submitted: Boolean(t.upstreamTaskId), hadJob: Boolean(job) }, 'open task had no live job; re-added');
    return true;
  }

  /** Every open task of the pool, page by page (bounded: MAX_PAGES pages a sweep; the next sweep starts over). */
  private async *openTaskPages(): AsyncGenerator<TaskRecord[]> {
    let afterId: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const rows = await this.tasks.findOpen(this.pool, this.orphanAfterMs, PAGE_SIZE, afterId);
      yield rows;
      if (rows.length < PAGE_SIZE) return;
      afterId = rows[rows.length - 1]!.id;
    }
  }
}
