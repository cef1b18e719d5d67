import type { TaskRecord, TaskRepository } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { batchFailed, pollLateness } from '@gmg/observability';
import type { ClaimedPoll, DuePolls, PollSettlement } from '@gmg/queue';
import type { TaskStepProcessor } from './task-step.processor';

export interface PollLoopDeps {
  pool: string;
  /** The pool's shards' due polls, index = shard; this process claims from all of them. */
  shards: DuePolls[];
  processor: Pick<TaskStepProcessor, 'pollStep'>;
  tasks: Pick<TaskRepository, 'getMany'>;
  /** A task that left the poll path for a submit step goes back to its BullMQ job (pool-sweeper's re-add). */
  requeue(taskId: string): Promise<unknown>;
  logger: Logger;
}

export interface PollLoopOptions {
  /** Polls stepping at once in this process (all shards together). */
  concurrency: number;
  /** Polls one claim takes at most (one script, one Postgres read). Default 100. */
  batch?: number;
  /** Longest sleep when nothing is due: bounds how late a poll re-added by another process is seen. Default 250 ms. */
  idleMaxMs?: number;
  /**
   * Shortest sleep after a claim that was not full: polls falling due meanwhile are claimed together, one script
   * for several (at 2,000 polls/s, ~20 per claim instead of 1–2), for at most this much lateness. Default 10 ms.
   */
  minClaimIntervalMs?: number;
  /** Settlements of the steps ending within this window go to Redis in one script per shard. Default 5 ms. */
  settleWindowMs?: number;
  /** Wait after a failed claim or step (Redis or Postgres unavailable). Default 1 s. */
  errorBackoffMs?: number;
}

/**
 * The steady poll path (issue 22 item 3): claims due polls in batches from each shard's sorted set (DuePolls), reads
 * their rows in one query, runs each poll step (TaskStepProcessor.pollStep: the same step machine as the BullMQ job)
 * and settles the claims in batches: due again at the next interval, or dropped when the task ended. A claim not
 * settled (a crash, Redis lost the answer) is taken again by any worker after the lease: at least once, as before;
 * a poll step is idempotent (it re-reads the row; every transition is a guarded UPDATE).
 */
export class PollLoop {
  private readonly batch: number;
  private readonly idleMaxMs: number;
  private readonly errorBackoffMs: number;
  private readonly minClaimIntervalMs: number;
  private readonly settleWindowMs: number;
  private active = 0;
  private stopped = false;
  private loops: Promise<void>[] = [];
  private readonly sleepers = new Set<() => void>();
  /** Claim loops waiting for a free slot (woken by a step's end; a loop sleeping until the next due poll is not). */
  private readonly slotWaiters = new Set<() => void>();
  private readonly pending = new Map<DuePolls, PollSettlement[]>();
  private readonly flushes = new Set<Promise<void>>();
  private readonly steps = new Set<Promise<void>>();
  /** Per shard's loop, when its last claim ended (taken, empty or failed): the loop's heartbeat (liveness). */
  private readonly lastClaimAt = new Map<DuePolls, number>();

  constructor(
    private readonly d: PollLoopDeps,
    private readonly o: PollLoopOptions,
  ) {
    this.batch = Math.max(1, o.batch ?? 100);
    this.idleMaxMs = Math.max(1, o.idleMaxMs ?? 250);
    this.errorBackoffMs = Math.max(1, o.errorBackoffMs ?? 1000);
    this.minClaimIntervalMs = Math.max(0, o.minClaimIntervalMs ?? 10);
    this.settleWindowMs = Math.max(0, o.settleWindowMs ?? 5);
  }

  start(): void {
    if (this.loops.length > 0) return;
    for (const polls of this.d.shards) this.lastClaimAt.set(polls, Date.now());
    this.loops = this.d.shards.map((polls) => this.run(polls));
  }

  /**
   * Liveness (issue 38): how long ago the least recent shard loop's last claim ended. A turning loop claims at least
   * every `idleMaxMs` (or `errorBackoffMs` after a failure), so a large value means a loop is stuck (a claim that
   * never returns, steps that never release their slots). 0 before start and once stopped.
   */
  sinceLastClaimMs(now = Date.now()): number {
    if (this.stopped || this.lastClaimAt.size === 0) return 0;
    return Math.max(0, now - Math.min(...this.lastClaimAt.values()));
  }

  /** Stops claiming, lets the running steps end and settles them. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const wake of [...this.sleepers, ...this.slotWaiters]) wake();
    await Promise.all(this.loops);
    await Promise.all([...this.steps]);
    this.flushAll();
    await Promise.all([...this.flushes]);
  }

  private async run(polls: DuePolls): Promise<void> {
    while (!this.stopped) {
      const free = Math.min(this.batch, this.o.concurrency - this.active);
      if (free <= 0) {
        await this.sleep(this.idleMaxMs, this.slotWaiters);
        continue;
      }
      let claimed: Awaited<ReturnType<DuePolls['claim']>>;
      try {
        claimed = await polls.claim(Date.now(), free);
        this.lastClaimAt.set(polls, Date.now());
      } catch (e) {
        this.lastClaimAt.set(polls, Date.now());
        batchFailed(this.d.logger, 'poll_claim', e, { pool: this.d.pool }, 'claiming due polls failed; retrying');
        await this.sleep(this.errorBackoffMs);
        continue;
      }
      if (claimed.polls.length > 0) this.track(this.runBatch(polls, claimed.polls));
      if (claimed.polls.length < free) {
        const until = claimed.nextDueAt === null ? this.idleMaxMs : claimed.nextDueAt - Date.now();
        await this.sleep(Math.max(1, this.minClaimIntervalMs, Math.min(this.idleMaxMs, until)));
      }
    }
  }

  private track(p: Promise<void>): void {
    this.steps.add(p);
    void p.finally(() => this.steps.delete(p));
  }

  private async runBatch(polls: DuePolls, batch: ClaimedPoll[]): Promise<void> {
    this.active += batch.length;
    const now = Date.now();
    for (const c of batch) if (!c.reclaimed) pollLateness.observe({ pool: this.d.pool }, Math.max(0, now - c.dueAt) / 1000);
    let rows: Map<string, TaskRecord> | undefined;
    try {
      rows = await this.d.tasks.getMany(batch.map((c) => c.taskId));
    } catch (e) {
      batchFailed(this.d.logger, 'poll_rows', e, { pool: this.d.pool, polls: batch.length }, 'reading the rows of due polls failed; due again after a pause');
      for (const c of batch)
        this.settle(polls, { taskId: c.taskId, dueAt: Date.now() + this.errorBackoffMs, failures: c.failures, previousFailures: c.failures });
      this.release(batch.length);
      return;
    }
    await Promise.all(batch.map((c) => this.runOne(polls, c, rows!.get(c.taskId) ?? null)));
  }

  private async runOne(polls: DuePolls, c: ClaimedPoll, row: TaskRecord | null): Promise<void> {
    const keep = { taskId: c.taskId, previousFailures: c.failures };
    try {
      const out = await this.d.processor.pollStep(c.taskId, row, c.failures, c.trace);
      if (out.kind === 'done') this.settle(polls, { ...keep, failures: 0 });
      else if (out.next === 'poll') this.settle(polls, { ...keep, dueAt: Date.now() + out.ms, failures: out.data.pollFailures ?? 0 });
      else {
        // Not polling any more (cannot happen today: the row had an upstream id): back to the BullMQ step machine.
        await this.d.requeue(c.taskId);
        this.settle(polls, { ...keep, failures: 0 });
      }
    } catch (e) {
      this.d.logger.error({ pool: this.d.pool, taskId: c.taskId, err: (e as Error).message }, 'poll step failed; due again after a pause');
      this.settle(polls, { ...keep, dueAt: Date.now() + this.errorBackoffMs, failures: c.failures });
    } finally {
      this.release(1);
    }
  }

  private release(n: number): void {
    this.active -= n;
    // a claim loop waiting for a free slot goes on now
    for (const wake of [...this.slotWaiters]) wake();
  }

  /** Settlements of one window (settleWindowMs) go to Redis in one script per shard. */
  private settle(polls: DuePolls, s: PollSettlement): void {
    const list = this.pending.get(polls);
    if (list) {
      list.push(s);
      return;
    }
    this.pending.set(polls, [s]);
    if (this.stopped) setImmediate(() => this.flush(polls));
    else setTimeout(() => this.flush(polls), this.settleWindowMs);
  }

  private flushAll(): void {
    for (const polls of [...this.pending.keys()]) this.flush(polls);
  }

  private flush(polls: DuePolls): void {
    const list = this.pending.get(polls);
    if (!list) return;
    this.pending.delete(polls);
    const p = polls.settle(list).catch((e: unknown) => {
      // The claims stay: after the lease any worker takes them again (a duplicate poll, never a lost one).
      batchFailed(this.d.logger, 'poll_settle', e, { pool: this.d.pool, polls: list.length }, 'settling polls failed; they come back after the lease');
    });
    this.flushes.add(p);
    void p.finally(() => this.flushes.delete(p));
  }

  /** Waits `ms`, or less when stopped or woken through `set`. */
  private sleep(ms: number, set = this.sleepers): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        set.delete(done);
        resolve();
      };
      const t = setTimeout(done, ms);
      set.add(done);
    });
  }
}
