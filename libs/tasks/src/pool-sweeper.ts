import { TASK_FAILURE_TYPES, TASK_TIMEOUT_MESSAGE, taskJobId, type Pool, type TaskJobData } from '@gmg/contracts';
import { forEachIdPage, type TaskRecoveryRepository, type TaskRepository } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { batchFailed } from '@gmg/observability';
import { jobPresence, shardOf, type DuePolls, type Redis, type TaskQueue } from '@gmg/queue';
import type { TaskLifecycle } from './task-lifecycle';
import type { TaskViewStore } from './task-view.store';

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
  /** The pool's queue shards, index = shard (QUEUE_SHARDS): a task belongs to shards[shardOf(id, length)]. */
  queues: TaskQueue[];
  /** Each shard's due polls (the steady poll path), index = shard: a task there is not orphaned. */
  polls: DuePolls[];
  /** Where the orphan walk's cursor is kept (views are checked on it too). */
  redis: Redis;
  /** The cursor's key (keys.ts sweepCursorKey), shared by every replica of the pool. */
  cursorKey: string;
  logger: Logger;
  /** A task untouched for this long is checked for a job (the edge enqueues right after its commit). */
  orphanAfterMs: number;
  /**
   * Rows one sweep loads at most, per step (timeouts, orphans). The orphan walk resumes after the last id the
   * previous sweep checked, so a backlog of N open tasks is walked in full every ceil(N / this) + 1 sweeps.
   * Default 20,000.
   */
  maxRowsPerSweep?: number;
  /** Rows a rebuild walks at most (after a Redis loss every open task is checked at once). Default 1,000,000. */
  maxRowsPerRebuild?: number;
}

/** The orphan walk's cursor outlives a few missed sweeps, not an abandoned pool. */
const CURSOR_TTL_SECONDS = 24 * 3600;

/**
 * The periodic `sweep` job of a pool (one job scheduler across all replicas):
 * (a) open tasks past their deadline fail with `Task timeout` (winners settle), so a task whose job was lost
 *     still ends and is refunded;
 * (b) open tasks without a live job get one again (jobId = taskId, so a task never has two), stepping to `poll`
 *     when the row already has an upstream id: a lost job never resubmits.
 * `rebuild()` is (b) for every open task, whatever its age, plus its task view: what runs after a Redis loss.
 * Every read is a keyset page of ids (no blob), every task is handled on its own (one that throws is logged and
 * skipped), and one sweep loads at most `maxRowsPerSweep` ids per step; the orphan walk resumes where the last
 * sweep (of any replica) stopped, so a lost job is found within (ceil(open tasks / maxRowsPerSweep) + 1) sweep
 * intervals after `orphanAfterMs`, at any backlog.
 */
export class PoolSweeper {
  private readonly maxRows: number;
  private readonly maxRebuildRows: number;

  constructor(private readonly d: PoolSweeperDeps) {
    this.maxRows = d.maxRowsPerSweep ?? 20_000;
    this.maxRebuildRows = d.maxRowsPerRebuild ?? 1_000_000;
  }

  async sweep(): Promise<PoolSweepResult> {
    const r = { timedOut: 0, readded: 0, failed: 0 };
    await this.timeouts(r);
    // an unreadable cursor starts the walk from the oldest id (slower, never wrong)
    const from = await this.d.redis.get(this.d.cursorKey).catch((e: unknown) => {
      batchFailed(this.d.logger, 'sweep_cursor', e, { pool: this.d.pool }, 'reading the sweep cursor failed; this sweep walks from the oldest task');
      return null;
    });
    const walk = await forEachIdPage(
      (limit, after) => this.d.recovery.openIds(this.d.pool, this.d.orphanAfterMs, limit, after),
      this.maxRows,
      async (ids) => {
        const { jobless } = await this.inspect(ids, false);
        for (const id of jobless)
          await this.isolated(id, r, async () => {
            if (await this.requeue(id)) r.readded++;
          });
      },
      from ?? undefined,
    );
    // the end reached: the next sweep starts from the first id again
    if (walk.done || walk.lastId === undefined) await this.d.redis.del(this.d.cursorKey);
    else await this.d.redis.set(this.d.cursorKey, walk.lastId, 'EX', CURSOR_TTL_SECONDS);
    if (r.timedOut || r.readded || r.failed) this.d.logger.info({ pool: this.d.pool, ...r }, 'pool sweep');
    return r;
  }

  /** After a Redis loss: every open task gets its job back (same job id, never twice) and its view rewritten. */
  async rebuild(): Promise<PoolRebuildResult> {
    const r = { timedOut: 0, readded: 0, failed: 0, views: 0 };
    await this.timeouts(r);
    await forEachIdPage(
      (limit, after) => this.d.recovery.openIds(this.d.pool, 0, limit, after),
      this.maxRebuildRows,
      async (ids) => {
        const { jobless, viewless } = await this.inspect(ids, true);
        for (const id of jobless)
          await this.isolated(id, r, async () => {
            if (await this.requeue(id)) r.readded++;
          });
        for (const id of viewless) {
          await this.isolated(id, r, async () => {
            const row = await this.d.tasks.get(id);
            if (row) {
              await this.d.views.write(row);
              r.views++;
            }
          });
        }
      },
    );
    this.d.logger.warn({ pool: this.d.pool, ...r }, 'pool rebuilt from Postgres after a Redis loss');
    return r;
  }

  /** (a): overdue open tasks fail with Task timeout. */
  private async timeouts(r: PoolSweepResult): Promise<void> {
    await forEachIdPage(
      (limit, after) => this.d.recovery.overdueIds(this.d.pool, limit, after),
      this.maxRows,
      async (ids) => {
        for (const id of ids) {
          await this.isolated(id, r, async () => {
            if (await this.d.lifecycle.fail(id, TASK_TIMEOUT_MESSAGE, TASK_FAILURE_TYPES.timeout)) r.timedOut++;
          });
        }
      },
    );
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
   * Which tasks of a page have no live job and no due poll on any shard (and, with `views`, no task view): first each
   * task's due poll on its own shard (where a polling task is: two O(1) commands, one pipeline per shard), then for
   * the rest their jobs (jobPresence) and due polls on every shard (a reshard leaves them elsewhere), each a pipelined
   * round trip in that shard's slot; the views, each in its task's own slot, as concurrent single commands. A task
   * whose live job or due poll sits on another current shard than its own (after a reshard) keeps it: only a task
   * with neither on any shard is re-added, onto its own shard.
   */
  private async inspect(ids: string[], views: boolean): Promise<{ jobless: string[]; viewless: string[] }> {
    const { queues, polls } = this.d;
    const live = new Set<string>();
    // 1. on its own shard, most tasks poll: two O(1) commands each, one pipeline per shard
    const byShard = new Map<number, string[]>();
    for (const id of ids) {
      const shard = shardOf(id, queues.length);
      const list = byShard.get(shard);
      if (list) list.push(id);
      else byShard.set(shard, [id]);
    }
    await Promise.all(
      [...byShard].map(async ([shard, some]) => {
        (await polls[shard]!.present(some)).forEach((p, i) => {
          if (p) live.add(some[i]!);
        });
      }),
    );
    // 2. the rest (submitting, or after a reshard on another shard): a job or a due poll on any shard
    const rest = ids.filter((id) => !live.has(id));
    if (rest.length > 0) {
      const jobIds = rest.map((id) => taskJobId(id));
      await Promise.all(
        queues.map(async (queue) => {
          (await jobPresence(queue, jobIds)).forEach((p, i) => {
            if (p === 'live') live.add(rest[i]!);
          });
        }),
      );
      await Promise.all(
        polls.map(async (shardPolls, shard) => {
          const others = rest.filter((id) => !live.has(id) && shardOf(id, queues.length) !== shard);
          if (others.length === 0) return;
          (await shardPolls.present(others)).forEach((p, i) => {
            if (p) live.add(others[i]!);
          });
        }),
      );
    }
    const jobless = ids.filter((id) => !live.has(id));
    if (!views) return { jobless, viewless: [] };
    const present = await Promise.all(ids.map((id) => this.d.redis.exists(this.d.views.key(id))));
    return { jobless, viewless: ids.filter((_, i) => present[i] !== 1) };
  }

  /**
   * Re-adds the job of an open task that has none (or only a finished one: a task on the poll path ended its job);
   * true when it did. Its first step polls when the row has an upstream id, and hands the task to the poll path again.
   */
  async requeue(taskId: string): Promise<boolean> {
    const { queues, logger } = this.d;
    const queue = queues[shardOf(taskId, queues.length)]!;
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
