import { DelayedError, type Job } from 'bullmq';
import { MODERATION_MESSAGE, canonicalJson, NO_UPSTREAM_MESSAGE, TASK_FAILURE_TYPES, TASK_TIMEOUT_MESSAGE, isTerminal, type TaskJobData } from '@gmg/contracts';
import type { ChannelGroupResolver, ChannelRepository, TaskRecord, TaskRepository } from '@gmg/db';
import { UpstreamError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';
import { SpanKind, trackBreaker, updateActiveSpan, withSpan } from '@gmg/observability';
import { requireTaskId } from '@gmg/queue';
import {
  channelTarget,
  channelUsable,
  healthEffect,
  keyedTarget,
  pickChannel,
  pickKey,
  taskKey,
  type ChannelHealthReporter,
  type AdapterRegistry,
  type CallbackLinks,
  type ChannelTarget,
  type CircuitBreaker,
  type MediaKeeper,
  type UpstreamAdapter,
  type UpstreamPoll,
} from '@gmg/upstream';
import type { TaskLifecycle } from './task-lifecycle';
import { deliveredCapture, hasExpectedResult } from './result-check';
import { pollDelayMs, retryDelayMs, MIN_STEP_DELAY_MS } from './step-timing';

/** The job data of a task job. */
export type TaskJobState = TaskJobData;

export interface TaskProcessorDeps {
  tasks: TaskRepository;
  channels: Pick<ChannelRepository, 'candidates' | 'getWithSecret'>;
  groups: Pick<ChannelGroupResolver, 'groupOf'>;
  adapters: AdapterRegistry;
  breaker: CircuitBreaker;
  /**
   * Shared channel and key health (issue 37): refusals set a key aside, a channel whose breaker opens cools down for
   * every replica. Absent: the in-process breaker alone.
   */
  health?: ChannelHealthReporter;
  lifecycle: TaskLifecycle;
  logger: Logger;
  /** Keeps the files of vendor protocols (base64, short-lived or keyed links) and gives our links for them. */
  keeper: MediaKeeper;
}

export interface TaskProcessorOptions {
  /** POLL_INTERVAL_SCALE: multiplies poll intervals and retry backoffs. */
  timeScale: number;
  /** First retry delay of a failed submit or poll (before scale). Default 1 s. */
  retryBaseMs?: number;
  /** Largest retry delay (before scale). Default 60 s. */
  retryMaxMs?: number;
  /** Retryable submit failures on one channel before it is excluded and another one tried. Default 3. */
  failuresPerChannel?: number;
  /** Retryable submit failures (all channels) plus waits for a closed circuit before `No available upstream`. Default 10. */
  maxSubmitAttempts?: number;
  /** Consecutive transient poll failures before the task fails. Default 20. */
  maxPollFailures?: number;
  /**
   * Vendor callbacks (UPSTREAM_CALLBACK_BASE_URL set; issue 35 item 8): each submit to an adapter that takes one gets
   * the task's signed callback URL, and that task polls `pollFactor` times less often (the safety net). Absent: off.
   */
  callbacks?: { links: Pick<CallbackLinks, 'url'>; pollFactor: number };
  random?: () => number;
}

/** What a step leaves: nothing (the task ended), or a next step in `ms`, a submit (retry) or a poll. */
export type StepOutcome = { kind: 'done' } | { kind: 'delay'; ms: number; data: TaskJobState; next: 'submit' | 'poll' };
type Outcome = StepOutcome;
const DONE: Outcome = { kind: 'done' };

/** Where a task's polls wait once it is polling (the pool's DuePolls of its shard): off BullMQ's delayed set. */
export type PollHandOff = (taskId: string, dueAt: number, pollFailures: number, trace?: Record<string, string>) => Promise<void>;

/**
 * The task's step machine. `submit` picks a channel and hands the task to it, `poll` asks for its state. The `task`
 * job runs submits (a retry waits in BullMQ's delayed set: moveToDelayed + DelayedError) and, once the task polls,
 * hands it to the poll path (PollLoop, one shard's due set), which runs the same step per poll: no worker slot is
 * held while an upstream renders. Every step first re-reads the row, so a resumed job or poll (stalled, re-added by
 * the sweeper, duplicated) continues from the task's real state: an upstream id on the row means poll, never
 * resubmit.
 */
export class TaskStepProcessor {
  private readonly o: Required<Omit<TaskProcessorOptions, 'random' | 'callbacks'>> & Pick<TaskProcessorOptions, 'random' | 'callbacks'>;

  /**
   * `handOff`: a step whose next step is a poll puts the task on the steady poll path (PollLoop) and its BullMQ job
   * ends; only a submit retry waits in BullMQ's delayed set.
   */
  constructor(
    private readonly d: TaskProcessorDeps,
    opts: TaskProcessorOptions,
    private readonly handOff: PollHandOff,
  ) {
    this.o = {
      retryBaseMs: 1000,
      retryMaxMs: 60_000,
      failuresPerChannel: 3,
      maxSubmitAttempts: 10,
      maxPollFailures: 20,
      ...opts,
    };
  }

  /** BullMQ processor of the `task` job. */
  async process(job: Job<TaskJobData>, token: string | undefined): Promise<void> {
    const taskId = requireTaskId(job.data);
    // One span per step, continuing the submission's trace carried in the job data.
    const out = await withSpan(`task step ${job.queueName}`, { kind: SpanKind.CONSUMER, parent: job.data.trace, attributes: { 'gmg.task_id': taskId } }, () =>
      this.step(taskId, { ...job.data }),
    );
    if (out.kind === 'done') return;
    if (out.next === 'poll') {
      // Polling from now on: its polls wait in the shard's due set; this job completes (the add comes first, so a
      // crash between the two leaves a duplicate, never nothing).
      await this.handOff(taskId, Date.now() + out.ms, out.data.pollFailures ?? 0, job.data.trace);
      return;
    }
    if (!token) throw new Error('task job without a lock token cannot be delayed');
    // A retry that leaves the step state as it was skips the write (one Redis round trip saved).
    if (JSON.stringify(out.data) !== JSON.stringify(job.data)) await job.updateData(out.data);
    await job.moveToDelayed(Date.now() + out.ms, token);
    throw new DelayedError();
  }

  /**
   * A steady poll (PollLoop): the same step, from a row read with its batch (null: no such task), continuing the
   * submission's trace as the job did.
   */
  async pollStep(taskId: string, row: TaskRecord | null, pollFailures: number, trace?: Record<string, string>): Promise<Outcome> {
    return withSpan('task step', { kind: SpanKind.CONSUMER, parent: trace, attributes: { 'gmg.task_id': taskId } }, () =>
      this.step(taskId, { taskId, pollFailures }, row),
    );
  }

  /** One step from the row's state (`row`: already read; undefined: read it now). Exposed for tests. */
  async step(taskId: string, s: TaskJobState, row?: TaskRecord | null): Promise<Outcome> {
    const task = row === undefined ? await this.d.tasks.get(taskId) : row;
    if (!task) {
      this.d.logger.warn({ taskId }, 'task job for a task that does not exist; dropping it');
      return DONE;
    }
    if (isTerminal(task.status)) return DONE;
    if (task.deadlineAt.getTime() <= Date.now()) {
      await this.d.lifecycle.fail(task.id, TASK_TIMEOUT_MESSAGE, TASK_FAILURE_TYPES.timeout);
      return DONE;
    }
    const polling = Boolean(task.upstreamTaskId && task.channelId);
    updateActiveSpan(`task ${polling ? 'poll' : 'submit'}`, { 'gmg.pool': task.pool, 'gmg.model': task.model });
    const out = task.upstreamTaskId && task.channelId ? await this.poll(task, task.channelId, task.upstreamTaskId, s) : await this.submit(task, s);
    if (out.kind === 'delay') {
      // Wake up by the deadline at the latest, so a timeout is noticed on time even with a long interval.
      out.ms = Math.max(MIN_STEP_DELAY_MS, Math.min(out.ms, task.deadlineAt.getTime() - Date.now() + MIN_STEP_DELAY_MS));
    }
    return out;
  }

  private async submit(task: TaskRecord, s: TaskJobState): Promise<Outcome> {
    const group = await this.d.groups.groupOf(task.apiKeyId, task.accountId);
    const excluded = new Set(s.excludedChannels ?? []);
    let usable = (await this.d.channels.candidates(task.model, group)).filter((c) => !excluded.has(c.id));
    // A continuation (extension, follow-up, asset) names upstream ids that only its channel knows.
    const pinned = task.request.pinnedChannelId;
    if (pinned) usable = usable.filter((c) => c.id === pinned);
    if (usable.length === 0) return this.failNoUpstream(task, 'no channel serves this model and group');
    // The whole request (up to the contract's body cap) is read here only, once per submit attempt.
    const request = await this.d.tasks.getRequest(task.id);
    if (!request) return DONE;
    // Only channels whose protocol can carry this request (the edge checked it at submit; channels may have changed).
    const able = usable.filter((c) => !this.d.adapters.getAdapter(c.protocol)?.check?.(channelTarget(c), request));
    if (able.length === 0) return this.failNoUpstream(task, 'no channel of this model and group can carry the request');
    usable = able;
    // Channels set aside in the shared health (cooling, disabled, every key refused) wait for the probe, like open circuits.
    const now = Date.now();
    const ch = pickChannel(
      usable.filter((c) => channelUsable(c, now)),
      this.d.breaker,
    );
    if (ch) trackBreaker(this.d.breaker, ch);
    const attempts = (s.submitAttempts ?? 0) + 1;
    if (!ch) {
      // Every usable channel has an open circuit: wait for one to cool down, a bounded number of times.
      if (attempts >= this.o.maxSubmitAttempts) return this.failNoUpstream(task, 'all channel circuits open');
      return { kind: 'delay', ms: this.retryDelay(attempts), data: { ...s, submitAttempts: attempts }, next: 'submit' };
    }
    const adapter = this.d.adapters.getAdapter(ch.protocol);
    if (!adapter) {
      this.d.logger.error({ taskId: task.id, channel: ch.name, protocol: ch.protocol }, 'channel protocol has no adapter; skipping channel');
      return { kind: 'delay', ms: MIN_STEP_DELAY_MS, data: { ...s, excludedChannels: [...excluded, ch.id] }, next: 'submit' };
    }
    const key = pickKey(ch.keys, { now });
    const target = keyedTarget(ch, key ?? null);
    try {
      const callbackUrl = this.takesCallbacks(target) ? this.callbackUrl(task) : undefined;
      const { upstreamTaskId, done } = await adapter.submit(target, request, { taskId: task.id, ...(callbackUrl ? { callbackUrl } : {}) });
      if (this.d.health) await this.d.health.succeeded(target, key);
      else this.d.breaker.recordSuccess(ch.id);
      const channelKeyId = key?.id ?? null;
      // A synchronous vendor answered the finished task: keep its files, then end it in one statement that also
      // names the channel (a crash before that re-runs the submit; nothing was recorded half-way).
      if (done) return await this.finish(task, target, done, s, { channelId: ch.id, upstreamTaskId, channelKeyId });
      const rec = await this.d.tasks.markSubmitted(task.id, ch.id, upstreamTaskId, channelKeyId);
      if (!rec) {
        // Ended meanwhile (cancelled by its owner, timed out), or another run of this step submitted first: the
        // upstream task just made is not wanted.
        await adapter
          .cancel?.(target, upstreamTaskId, task.request)
          .catch((err: unknown) =>
            this.d.logger.warn({ taskId: task.id, channel: ch.name, err: (err as Error).message }, 'upstream cancel of an ended task failed'),
          );
        return DONE;
      }
      this.d.logger.info({ taskId: task.id, channel: ch.name, upstreamTaskId }, 'task submitted upstream');
      await this.d.lifecycle.writeView(rec);
      return { kind: 'delay', ms: this.pollDelay(task, target), data: { ...s, pollFailures: 0 }, next: 'poll' };
    } catch (e) {
      if (!(e instanceof UpstreamError)) throw e;
      const effect = healthEffect(e);
      // a vendor's balance refusal in a 4xx of its own (not 401-403) is about our key, not the request
      if (!e.retryable && effect !== 'refused') return this.failFinal(task, e);
      if (this.d.health) await this.d.health.failed(target, effect, e.message, e.retryAfterMs);
      else this.d.breaker.recordFailure(ch.id);
      // A key set aside (refused, rate limited) while the channel has other keys: the next try takes another key of
      // the same channel at once, and the channel is not blamed.
      if (key && (effect === 'refused' || effect === 'rate_limited') && ch.keys.length > 1) {
        this.d.logger.warn({ taskId: task.id, channel: ch.name, key: key.id, kind: e.kind, status: e.status, err: e.message }, 'channel key set aside');
        if (attempts >= this.o.maxSubmitAttempts) return this.failNoUpstream(task, 'submit attempts exhausted');
        return { kind: 'delay', ms: MIN_STEP_DELAY_MS, data: { ...s, submitAttempts: attempts }, next: 'submit' };
      }
      const onChannel = (s.channelFailures?.[ch.id] ?? 0) + 1;
      this.d.logger.warn(
        { taskId: task.id, channel: ch.name, kind: e.kind, status: e.status, attempt: attempts, onChannel, err: e.message },
        'upstream submit failed (retryable)',
      );
      if (attempts >= this.o.maxSubmitAttempts) return this.failNoUpstream(task, 'submit attempts exhausted');
      const next: TaskJobState = { ...s, submitAttempts: attempts, channelFailures: { ...s.channelFailures, [ch.id]: onChannel } };
      // Fail over only when another channel is left; a single channel keeps being retried with backoff. A channel
      // that said when to come back (429/503 Retry-After) is left at once for another one, or waited for.
      if ((onChannel >= this.o.failuresPerChannel || e.retryAfterMs !== undefined) && usable.length > 1) {
        next.excludedChannels = [...excluded, ch.id];
        return { kind: 'delay', ms: this.retryDelay(1), data: next, next: 'submit' };
      }
      return { kind: 'delay', ms: Math.max(this.retryDelay(onChannel), e.retryAfterMs ?? 0), data: next, next: 'submit' };
    }
  }

  private async poll(task: TaskRecord, channelId: string, upstreamTaskId: string, s: TaskJobState): Promise<Outcome> {
    const row = await this.d.channels.getWithSecret(channelId);
    const adapter: UpstreamAdapter | undefined = row ? this.d.adapters.getAdapter(row.protocol) : undefined;
    if (!row || !adapter) return this.failNoUpstream(task, 'the channel holding the task is gone or has no adapter');
    // the key that submitted it (or, once that key is set aside or removed, another of the channel's)
    const ch = keyedTarget(row, taskKey(row.keys ?? [], task.channelKeyId));
    try {
      // Polls do not feed the breaker: it answers "does this channel accept new work", which only submits tell
      // (a channel can refuse every submit with 429 while its running tasks poll fine).
      const p = await adapter.poll(ch, upstreamTaskId, task.request);
      return await this.finish(task, ch, p, s);
    } catch (e) {
      if (!(e instanceof UpstreamError)) throw e;
      if (!e.retryable) return this.failFinal(task, e);
      // a refused key is set aside (the next poll takes another key of the channel); nothing else of a poll counts
      if (this.d.health && healthEffect(e) === 'refused') await this.d.health.failed(ch, 'refused', e.message);
      const failures = (s.pollFailures ?? 0) + 1;
      this.d.logger.warn({ taskId: task.id, channel: ch.name, kind: e.kind, failures, err: e.message }, 'upstream poll failed (retryable)');
      if (failures > this.o.maxPollFailures) {
        await this.d.lifecycle.fail(task.id, 'Upstream unavailable', TASK_FAILURE_TYPES.upstream);
        return DONE;
      }
      // at the model's own cadence even when the vendor calls back: a nudged poll that failed must not wait for the
      // safety net
      const ms = Math.max(this.pollDelay(task), this.retryDelay(failures), e.retryAfterMs ?? 0);
      return { kind: 'delay', ms, data: { ...s, pollFailures: failures }, next: 'poll' };
    }
  }

  /**
   * What an upstream's answer about the task means here: completed (its files kept first, when the protocol hands
   * them to us), failed, or still running. `submittedTo`: the answer came with a synchronous submit.
   * Throws the keeper's UpstreamError (the caller retries or fails the task).
   */
  private async finish(
    task: TaskRecord,
    ch: ChannelTarget,
    p: UpstreamPoll,
    s: TaskJobState,
    submittedTo?: { channelId: string; upstreamTaskId: string; channelKeyId: string | null },
  ): Promise<Outcome> {
    if (p.status === 'completed' && p.media?.length) {
      let result;
      // Files the native view names (an art grid) are kept after the result's own, then moved out of its images.
      const named = Object.entries(p.nativeMedia ?? {});
      try {
        const media = [...p.media, ...named.map(([, m]) => m)];
        result = await this.d.keeper.keep({ taskId: task.id, channel: ch, media, result: p.result, expected: task.request.expected });
      } catch (e) {
        // A file that cannot be kept (wrong type, over the cap, a dead or private link) fails the task, refunded; a
        // transient failure (download or store write) propagates and the step retries.
        if (!(e instanceof UpstreamError) || e.retryable) throw e;
        this.d.logger.warn({ taskId: task.id, channel: ch.name, err: e.message }, 'the upstream result could not be kept');
        await this.d.lifecycle.fail(task.id, 'Generation failed: the upstream result could not be kept', TASK_FAILURE_TYPES.upstream);
        return DONE;
      }
      const links = named.length && result.images ? result.images.splice(result.images.length - named.length).map((i) => i.url) : [];
      const native = links.length ? { ...p.native, ...Object.fromEntries(named.map(([key], i) => [key, links[i]])) } : p.native;
      p = { ...p, result, native, media: undefined, nativeMedia: undefined };
    }
    if (submittedTo && p.status !== 'completed' && p.status !== 'failed') {
      throw new Error(`${ch.protocol}: a synchronous submit answered a task that is still ${p.status}`);
    }
    if (p.status === 'completed') {
      if (!hasExpectedResult(task.request.expected, p.result)) {
        // Charging for nothing is worse than a failed task: fail it, which refunds.
        this.d.logger.warn({ taskId: task.id, channel: ch.name, expected: task.request.expected?.kind }, 'upstream completed without a result');
        await this.d.lifecycle.fail(task.id, 'Generation failed: the upstream returned no result', TASK_FAILURE_TYPES.upstream);
        return DONE;
      }
      // Fewer images than billed, or a shorter video: charge what was delivered, release the rest.
      const capture = deliveredCapture(task.price, task.request.expected, p.result!);
      if (capture !== undefined) {
        this.d.logger.info(
          { taskId: task.id, channel: ch.name, price: task.price.toString(), capture: capture.toString() },
          'partial result: charging what was delivered',
        );
      }
      await this.d.lifecycle.complete(task.id, p.result!, p.native, capture, submittedTo);
      return DONE;
    }
    if (p.status === 'failed') {
      const moderation = p.error?.moderation === true;
      const message = moderation ? MODERATION_MESSAGE : p.error?.message || 'Generation failed';
      await this.d.lifecycle.fail(task.id, message, p.error?.type ?? (moderation ? TASK_FAILURE_TYPES.moderation : undefined), p.native);
      return DONE;
    }
    let rec: TaskRecord | null = null;
    if (p.progress > task.progress) rec = await this.d.tasks.updateProgress(task.id, p.progress);
    // The upstream's own view (e.g. an art suite task waiting in MODAL) is stored only when it changed; compared
    // canonically: the stored one came back from jsonb with its keys re-ordered, so a plain stringify always differed
    // and every steady poll cost an UPDATE and a view write.
    if (p.native && canonicalJson(p.native) !== canonicalJson(task.native ?? null)) {
      rec = (await this.d.tasks.updateNative(task.id, p.native)) ?? rec;
    }
    if (rec) await this.d.lifecycle.writeView(rec);
    return { kind: 'delay', ms: this.pollDelay(task, ch), data: { ...s, pollFailures: 0 }, next: 'poll' };
  }

  /** A final upstream refusal (4xx, moderation): another channel would refuse too, so no retry. */
  private async failFinal(task: TaskRecord, e: UpstreamError): Promise<Outcome> {
    this.d.logger.info({ taskId: task.id, kind: e.kind, status: e.status, err: e.message }, 'upstream refused the task (final)');
    if (e.kind === 'moderation') await this.d.lifecycle.fail(task.id, MODERATION_MESSAGE, TASK_FAILURE_TYPES.moderation);
    else {
      // The upstream's own message names our channel and endpoint: the client gets a neutral one.
      const detail = e.status ? ` (HTTP ${e.status})` : '';
      await this.d.lifecycle.fail(task.id, `Upstream rejected the request${detail}`, TASK_FAILURE_TYPES.upstream);
    }
    return DONE;
  }

  private async failNoUpstream(task: TaskRecord, why: string): Promise<Outcome> {
    this.d.logger.warn({ taskId: task.id, model: task.model, why }, 'no upstream for task');
    await this.d.lifecycle.fail(task.id, NO_UPSTREAM_MESSAGE, TASK_FAILURE_TYPES.noUpstream);
    return DONE;
  }

  /**
   * The next poll's delay: the model's cadence, or — given the channel, when its vendor calls back (callbacks on, the
   * adapter takes them, the channel did not turn them off) — that times UPSTREAM_CALLBACK_POLL_FACTOR: the callback
   * nudges the poll (DuePolls.nudge at the edge), these polls are only the safety net for a callback that never comes.
   */
  private pollDelay(task: TaskRecord, ch?: ChannelTarget): number {
    const ms = pollDelayMs(task.model, { scale: this.o.timeScale, random: this.o.random }, task.request);
    return ch && this.takesCallbacks(ch) ? Math.round(ms * this.o.callbacks!.pollFactor) : ms;
  }

  /** Vendor callbacks apply to this channel: on here, its adapter takes them, its settings do not say `callbacks: false`. */
  private takesCallbacks(ch: ChannelTarget): boolean {
    return this.o.callbacks !== undefined && this.d.adapters.getAdapter(ch.protocol)?.callbacks === true && ch.settings.callbacks !== false;
  }

  /** The task's signed callback URL: valid until its deadline and an hour more (a later one is late anyway). */
  private callbackUrl(task: TaskRecord): string {
    return this.o.callbacks!.links.url(task.id, task.pool, Math.floor(task.deadlineAt.getTime() / 1000) + 3600);
  }

  private retryDelay(attempt: number): number {
    return retryDelayMs(attempt, { scale: this.o.timeScale, baseMs: this.o.retryBaseMs, maxMs: this.o.retryMaxMs, random: this.o.random });
  }
}
