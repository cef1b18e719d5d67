import { TASK_FAILURE_TYPES, TASK_TIMEOUT_MESSAGE, taskJobId, type Pool, type TaskJobData } from '@gmg/contracts';
import type { TaskRecoveryRepository, TaskRepository } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import type { Redis, TaskQueue } from '@gmg/queue';
import type { TaskLifecycle } from './task-lifecycle';
import type { TaskViewStore } from './task-view.store';
import { forEachIdPage } from './sweep-pages';

export interface PoolSweepResult {
  timedOut: number;
  readded: number;
  /** Tasks whose handling threw: logged and skipped, retried next sweep. */
  failed: number;
}

export interface PoolRebuildResult extends PoolSweepResult {
  /** Task views written again from their row (the view was missing). */
  views: number;
}

/** Job states in which a job still drives its task; anything else (failed, completed, gone) leaves the task orphaned. */
const LIVE_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

export interface PoolSweeperDeps {
  pool: Pool;
  tasks: TaskRepository;
  recovery: TaskRecoveryRepository;
  lifecycle: TaskLifecycle;
  views: TaskViewStore;
  queue: TaskQueue;
  logger: Logger;
  /** A task untouched for this long is checked for a job (the edge enqueues right after its commit). */
  orphanAfterMs: number;
  /** Rows one sweep loads at most, per step (timeouts, orphans); the next sweep starts over. Default 20,000. */
  maxRowsPerSweep?: number;
}

/**
 * The periodic `sweep` job of a pool (one job scheduler across all replicas):
 * (a) open tasks past their deadline fail with `Task timeout` (winners settle), so a task whose job was lost
 *     still ends and is refunded;
 * (b) open tasks without a live job get one again (jobId = taskId, so a task never has two), stepping to `poll`
 *     when the row already has an upstream id: a lost job never resubmits.
 * `rebuild()` is (b) for every open task, whatever its age, plus its task view: what runs after a Redis loss.
 * Every read is a keyset page of ids (no blob), every task is handled on its own (one that throws is logged and
 * skipped), and one sweep loads at most `maxRowsPerSweep` ids per step.
 */
export class PoolSweeper {
  private readonly maxRows: number;

  constructor(private readonly d: PoolSweeperDeps) {
    this.maxRows = d.maxRowsPerSweep ?? 20_000;
  }

  async sweep(): Promise<PoolSweepResult> {
    const r = { timedOut: 0, readded: 0, failed: 0 };
    await this.timeouts(r);
    await forEachIdPage((limit, after) => this.d.recovery.openIds(this.d.pool, this.d.orphanAfterMs, limit, after), this.maxRows, async (ids) => {
      const { jobless } = await this.inspect(ids, false);
      for (const id of jobless) await this.isolated(id, r, async () => { if (await this.readd(id)) r.readded++; });
    });
    if (r.timedOut || r.readded || r.failed) this.d.logger.info({ pool: this.d.pool, ...r }, 'pool sweep');
    return r;
  }

  /** After a Redis loss: every open task gets its job back (same job id, never twice) and its view rewritten. */
  async rebuild(): Promise<PoolRebuildResult> {
    const r = { timedOut: 0, readded: 0, failed: 0, views: 0 };
    await this.timeouts(r);
    await forEachIdPage((limit, after) => this.d.recovery.openIds(this.d.pool, 0, limit, after), this.maxRows, async (ids) => {
      const { jobless, viewless } = await this.inspect(ids, true);
      for (const id of jobless) await this.isolated(id, r, async () => { if (await this.readd(id)) r.readded++; });
      for (const id of viewless) {
        await this.isolated(id, r, async () => {
          const row = await this.d.tasks.get(id);
          if (row) {
            await this.d.views.write(row);
            r.views++;
          }
        });
      }
    });
    this.d.logger.warn({ pool: this.d.pool, ...r }, 'pool rebuilt from Postgres after a Redis loss');
    return r;
  }

  /** (a): overdue open tasks fail with Task timeout. */
  private async timeouts(r: PoolSweepResult): Promise<void> {
    await forEachIdPage((limit, after) => this.d.recovery.overdueIds(this.d.pool, limit, after), this.maxRows, async (ids) => {
      for (const id of ids) {
        await this.isolated(id, r, async () => {
          if (await this.d.lifecycle.fail(id, TASK_TIMEOUT_MESSAGE, TASK_FAILURE_TYPES.timeout)) r.timedOut++;
        });
      }
    });
  }

  private async isolated(taskId: string, r: PoolSweepResult, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (e) {
      r.failed++;
      this.d.logger.error({ pool: this.d.pool, taskId, err: (e as Error).message }, 'pool sweep could not handle a task; skipped, retried next sweep');
    }
  }

  /**
   * Which tasks of a page have no live job (and, with `views`, no task view), in one pipelined round trip: a job is
   * live when its hash exists and it is in neither the completed nor the failed set. A healthy fleet of in-flight
   * tasks costs one Redis round trip per page.
   */
  private async inspect(ids: string[], views: boolean): Promise<{ jobless: string[]; viewless: string[] }> {
    const { queue } = this.d;
    const client = (await queue.client) as unknown as Redis;
    const pipe = client.pipeline();
    const per = views ? 4 : 3;
    for (const taskId of ids) {
      const id = taskJobId(taskId);
      pipe.exists(queue.toKey(id));
      pipe.zscore(queue.toKey('completed'), id);
      pipe.zscore(queue.toKey('failed'), id);
      if (views) pipe.exists(this.d.views.key(taskId));
    }
    const res = (await pipe.exec()) ?? [];
    const jobless: string[] = [];
    const viewless: string[] = [];
    ids.forEach((id, i) => {
      const [exists, completed, failed, view] = [0, 1, 2, 3].map((k) => res[per * i + k]?.[1]);
      if (!(exists === 1 && completed === null && failed === null)) jobless.push(id);
      if (views && view !== 1) viewless.push(id);
    });
    return { jobless, viewless };
  }

  /** Re-adds the job of an open task that has none (or only a finished one); true when it did. */
  private async readd(taskId: string): Promise<boolean> {
    const { queue, logger } = this.d;
    const jobId = taskJobId(taskId);
    const job = await queue.getJob(jobId);
    if (job) {
      const state = await job.getState();
      if (LIVE_STATES.has(state)) return false;
      // A finished job would block re-adding under the same id; a locked one refuses removal (then skip it).
      try {
        await job.remove();
      } catch (e) {
        logger.warn({ taskId, state, err: (e as Error).message }, 'could not remove the finished job of an open task');
        return false;
      }
    }
    // the step machine reads the row: an upstream id there means poll, never resubmit
    const data: TaskJobData = { taskId, submitAttempts: 0, pollFailures: 0, excludedChannels: [] };
    await queue.add('task', data, { jobId });
    logger.warn({ taskId, hadJob: Boolean(job) }, 'open task had no live job; re-added');
    return true;
  }
}
