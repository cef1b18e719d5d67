import { QUEUES } from '@gmg/contracts';
import { settleTask, TaskRepository, AccountRepository, LogsRepository, type TaskRecord } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { Worker } from 'bullmq';
import { createRedis, createTaskQueue, queueKeyPrefix, shardOf, sweepCursorKey, type Redis } from '@gmg/queue';
import { createTestDatabase, uniqueRedisPrefix, waitFor, TEST_REDIS_URL, type TestDatabase, deleteRedisPrefix } from '@gmg/testing';
import { CircuitBreaker, createAdapterRegistry, createGatewayAdapter, type AdapterRegistry, type MediaKeeper, type UpstreamAdapter } from '@gmg/upstream';
import { UpstreamError } from '@gmg/errors';
import { startPoolWorker, type PoolWorker, type PoolWorkerOptions } from './pool-worker';
import { TaskViewStore } from './task-view.store';
import { NO_MEDIA_KEEPER } from './no-media-keeper.test-kit';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.test-kit';
import { seedAccount, seedChannel, seedTask, type SeededAccount } from './seed-task.test-kit';

const logger = createLogger({ service: 'test', level: 'silent' });
const gateway = (): AdapterRegistry => createAdapterRegistry([createGatewayAdapter({ timeoutMs: 5000 })]);

/** One isolated world per test: its own database, Redis prefix and settlement log. */
interface World {
  db: TestDatabase;
  redis: Redis;
  prefix: string;
  account: SeededAccount;
  tasks: TaskRepository;
  views: TaskViewStore;
  /** Tasks whose settlement was asked for (at the call). */
  settled: string[];
  /** Tasks whose settlement has finished (the ledger shows it). */
  settledDone: string[];
  workers: PoolWorker[];
  start(
    opts?: Partial<PoolWorkerOptions> & { shards?: number },
    adapters?: AdapterRegistry,
    breaker?: CircuitBreaker,
    keeper?: MediaKeeper,
  ): Promise<PoolWorker>;
  enqueue(w: PoolWorker, t: TaskRecord): Promise<void>;
  waitTerminal(id: string, timeoutMs?: number): Promise<TaskRecord>;
  close(): Promise<void>;
}

const worlds: World[] = [];
const upstreams: FakeUpstream[] = [];

async function world(): Promise<World> {
  const db = await createTestDatabase();
  const redis = createRedis(TEST_REDIS_URL, 'worker');
  const prefix = uniqueRedisPrefix();
  const tasks = new TaskRepository(db.dataSource);
  const settled: string[] = [];
  const settledDone: string[] = [];
  const workers: PoolWorker[] = [];
  const w: World = {
    db,
    redis,
    prefix,
    tasks,
    settled,
    settledDone,
    workers,
    account: await seedAccount(db.dataSource),
    views: new TaskViewStore(redis, prefix),
    async start({ shards, ...opts } = {}, adapters = gateway(), breaker?: CircuitBreaker, keeper: MediaKeeper = NO_MEDIA_KEEPER) {
      const pw = await startPoolWorker(
        {
          pool: 'image',
          ds: db.dataSource,
          redis,
          prefix,
          adapters,
          keeper,
          logger,
          breaker,
          shards,
          // Stands in for billing: records who enqueued, settles right away.
          settlements: {
            enqueueSettlement: async (id) => {
              settled.push(id);
              await settleTask(db.dataSource, id);
              settledDone.push(id);
            },
          },
        },
        { concurrency: 5, pollIntervalScale: 0.05, sweepIntervalMs: 0, retryBaseMs: 200, ...opts },
      );
      workers.push(pw);
      return pw;
    },
    async enqueue(pw, t) {
      await pw.queue.add('task', { taskId: t.id, submitAttempts: 0, pollFailures: 0, excludedChannels: [] }, { jobId: t.id });
    },
    async waitTerminal(id, timeoutMs = 15_000) {
      return waitFor(
        async () => {
          const t = await tasks.get(id);
          return t && (t.status === 'completed' || t.status === 'failed') ? t : undefined;
        },
        { timeoutMs, what: `task ${id} to end` },
      );
    },
    async close() {
      for (const pw of workers) await pw.close(true).catch(() => undefined);
      await deleteRedisPrefix(redis, prefix);
      await redis.quit();
      await db.drop();
    },
  };
  worlds.push(w);
  return w;
}

async function upstream(opts: Parameters<typeof startFakeUpstream>[0] = {}): Promise<FakeUpstream> {
  const u = await startFakeUpstream(opts);
  upstreams.push(u);
  return u;
}

const available = async (w: World): Promise<bigint> => (await new AccountRepository(w.db.dataSource).get(w.account.accountId))!.available;

/** On the steady poll path: due (or claimed) in its shard's due polls, no BullMQ job driving it. */
const polling = async (pw: PoolWorker, id: string): Promise<boolean> => (await pw.polls[0]!.present([id]))[0] === true;

afterEach(async () => {
  while (worlds.length) await worlds.pop()!.close();
  while (upstreams.length) await upstreams.pop()!.close();
});

describe('pool worker step machine', () => {
  it('completes tasks through submit and polls, waiting on the poll path between polls instead of holding its single slot', async () => {
    const w = await world();
    const up = await upstream({ pollsToComplete: 4 });
    await seedChannel(w.db.dataSource, up.baseUrl, up.apiKey);
    const pw = await w.start({ concurrency: 1 });
    const list = await Promise.all([1, 2, 3].map((i) => seedTask(w.db.dataSource, w.account, `a cat ${i}`)));
    for (const t of list) await w.enqueue(pw, t);

    await waitFor(() => polling(pw, list[0].id), { what: 'a task on the poll path' });
    // its submit job handed it over and is removed (the row is the record; a kept job would cost Redis memory)
    await waitFor(async () => ((await pw.queue.getJob(list[0].id)) ? undefined : true), { what: 'the submit job removed' });

    const done = await Promise.all(list.map((t) => w.waitTerminal(t.id)));
    expect(done.map((t) => t.status)).toEqual(['completed', 'completed', 'completed']);
    expect(done[0].result?.images?.[0].url).toContain('/img/');
    // With one slot, a sleeping job would poll one task to the end before the next: polls interleave instead.
    const [a, b] = [up.polls.get(done[0].upstreamTaskId!)!, up.polls.get(done[1].upstreamTaskId!)!];
    expect(a.length).toBeGreaterThanOrEqual(4);
    expect(b.some((tb) => tb > a[0] && tb < a[a.length - 1])).toBe(true);
    expect(up.unauthorized).toBe(0);

    const view = await w.views.read(list[0].id);
    expect(view?.task).toMatchObject({ status: 'completed', progress: 100, cost: 0.001 });
    // the row turns completed before the winner writes the view and enqueues the settlement: wait for the last one
    await waitFor(() => (w.settledDone.length >= list.length ? true : undefined), { timeoutMs: 5_000, what: 'three settlements' });
    expect([...w.settled].sort()).toEqual(list.map((t) => t.id).sort());
    expect(await available(w)).toBe(1_000_000n - 3000n);
  });

  it('stops polling a task cancelled while it waits on the poll path: the next step sees the terminal row and ends', async () => {
    const w = await world();
    const up = await upstream({ pollsToComplete: 100_000 });
    await seedChannel(w.db.dataSource, up.baseUrl, up.apiKey);
    const pw = await w.start();
    const t = await seedTask(w.db.dataSource, w.account, 'a slow cat');
    await w.enqueue(pw, t);
    const upstreamId = await waitFor(
      async () => {
        const row = await w.tasks.get(t.id);
        return row?.upstreamTaskId && (up.polls.get(row.upstreamTaskId)?.length ?? 0) >= 1 ? row.upstreamTaskId : undefined;
      },
      { what: 'the task polled once' },
    );
    const out = await w.tasks.cancel(t.id, w.account.accountId, { code: 'task_failed', message: 'Task cancelled', type: 'cancelled' });
    expect(out.outcome).toBe('cancelled');
    // Its due poll is left in place: the next poll step must end it by itself.
    await waitFor(async () => ((await polling(pw, t.id)) ? undefined : true), { what: 'the task to leave the poll path' });
    const polls = up.polls.get(upstreamId)!.length;
    const row = (await w.tasks.get(t.id))!;
    expect(row).toMatchObject({ status: 'failed', error: { type: 'cancelled' } });
    // The worker did not write a terminal state of its own, so it asked for no settlement (the cancel's winner does).
    expect(w.settled).not.toContain(t.id);
    expect(up.polls.get(upstreamId)!.length).toBe(polls);
  });

  it('tells the upstream to cancel a task that was cancelled while its submit was in flight', async () => {
    const w = await world();
    const up = await upstream();
    await seedChannel(w.db.dataSource, up.baseUrl, up.apiKey);
    const pw = await w.start();
    const t = await seedTask(w.db.dataSource, w.account, 'a cat [sim:hold-submit]');
    await w.enqueue(pw, t);
    await waitFor(() => (up.held() === 1 ? true : undefined), { what: 'the submit held upstream' });
    expect((await w.tasks.cancel(t.id, w.account.accountId, { code: 'task_failed', message: 'Task cancelled', type: 'cancelled' })).outcome).toBe('cancelled');
    up.release();
    await waitFor(() => (up.cancels.length === 1 ? true : undefined), { what: 'the upstream cancel' });
    expect(up.cancels).toEqual([up.idOf(t.id)]);
    const row = (await w.tasks.get(t.id))!;
    expect(row).toMatchObject({ status: 'failed', upstreamTaskId: null, error: { type: 'cancelled' } });
  });

  it("keeps a vendor's files before completing (a transient keeper failure retries the poll); a file that cannot be kept fails the task and refunds", async () => {
    const w = await world();
    const up = await upstream();
    await seedChannel(w.db.dataSource, up.baseUrl, up.apiKey);
    // the gateway protocol, answering its finished tasks' images as files the gateway must keep (as vendor protocols do)
    const inner = createGatewayAdapter({ timeoutMs: 5000 });
    const withMedia: UpstreamAdapter = {
      ...inner,
      async poll(ch, id, req) {
        const p = await inner.poll(ch, id, req);
        return p.status === 'completed'
          ? { status: 'completed', progress: 100, media: [{ kind: 'image', source: { url: `${up.baseUrl}/files/${id}.png` } }] }
          : p;
      },
    };
    const calls: string[] = [];
    const unkeepable = new Set<string>();
    const keeper: MediaKeeper = {
      keep({ taskId, media }) {
        calls.push(taskId);
        if (unkeepable.has(taskId)) throw new UpstreamError('the file is not an image', false, undefined, 'bad_request');
        if (calls.filter((c) => c === taskId).length === 1) throw new UpstreamError('result store write failed', true, undefined, 'server');
        return Promise.resolve({ images: media.map((_, i) => ({ url: `https://gw.example/v1/results/${taskId}/${i}.png` })) });
      },
    };
    const pw = await w.start({}, createAdapterRegistry([withMedia]), undefined, keeper);
    const ok = await seedTask(w.db.dataSource, w.account, 'a kept cat');
    const bad = await seedTask(w.db.dataSource, w.account, 'an unkeepable cat');
    unkeepable.add(bad.id);
    await w.enqueue(pw, ok);
    await w.enqueue(pw, bad);
    const [okEnd, badEnd] = await Promise.all([w.waitTerminal(ok.id), w.waitTerminal(bad.id)]);
    expect(okEnd.status).toBe('completed');
    expect(okEnd.result).toEqual({ images: [{ url: `https://gw.example/v1/results/${ok.id}/0.png` }] });
    expect(calls.filter((c) => c === ok.id)).toHaveLength(2);
    expect(badEnd.status).toBe('failed');
    expect(badEnd.error?.message).toBe('Generation failed: the upstream result could not be kept');
    await waitFor(async () => (await available(w)) === 1_000_000n - 1000n, { what: 'the unkept task refunded, the kept one captured' });
  });

  it('fails a [sim:fail] task with the upstream message and releases the hold', async () => {
    const w = await world();
    const up = await upstream();
    await seedChannel(w.db.dataSource, up.baseUrl, up.apiKey);
    const pw = await w.start();
    const t = await seedTask(w.db.dataSource, w.account, 'a dog [sim:fail]');
    expect(await available(w)).toBe(1_000_000n - 1000n);
    await w.enqueue(pw, t);
    const end = await w.waitTerminal(t.id);
    expect(end.status).toBe('failed');
    expect(end.error).toEqual({ code: 'task_failed', message: 'Generation failed: simulated', type: 'generation_error' });
    await waitFor(async () => (await available(w)) === 1_000_000n, { what: 'refund' });
    expect((await w.views.read(t.id))?.task).toMatchObject({ status: 'failed', cost: 0 });
  });

  it('charges a partial result for what it delivered: 1 of 4 images asked → hold 4000, capture 1000, release 3000', async () => {
    const w = await world();
    const up = await upstream({ pollsToComplete: 1 });
    await seedChannel(w.db.dataSource, up.baseUrl, up.apiKey);
    const pw = await w.start();
    const opts = { model: 'pict-image-2', fields: { n: 4 }, price: 4000n };
    const partial = await seedTask(w.db.dataSource, w.account, 'four cats [sim:partial]', opts);
    const whole = await seedTask(w.db.dataSource, w.account, 'four dogs', opts);
    await w.enqueue(pw, partial);
    await w.enqueue(pw, whole);
    const [p, f] = [await w.waitTerminal(partial.id), await w.waitTerminal(whole.id)];
    expect([p.status, p.result?.images?.length, p.captureAmount]).toEqual(['completed', 1, 1000n]);
    expect([f.status, f.result?.images?.length, f.captureAmount]).toEqual(['completed', 4, 4000n]); // LEAST(NULL, price): the whole price
    // finished, not just asked for: the ledger is read next
    await waitFor(() => (w.settledDone.length >= 2 ? true : undefined), { timeoutMs: 5_000, what: 'two settlements' });
    const ledger = await new LogsRepository(w.db.dataSource).entriesOf(w.account.accountId, [partial.id, whole.id]);
    const of = (id: string) => ledger.filter((e) => e.taskId === id).map((e) => [e.kind, e.amount]);
    expect(of(partial.id)).toEqual([
      ['hold', 4000n],
      ['capture', 1000n],
      ['release', 3000n],
    ]);
    expect(of(whole.id)).toEqual([
      ['hold', 4000n],
      ['capture', 4000n],
    ]);
    expect(await available(w)).toBe(1_000_000n - 1000n - 4000n);
    expect((await w.views.read(partial.id))?.task).toMatchObject({ status: 'completed', cost: 0.001 });
  });

  it('fails and refunds a task the upstream reports completed without any result', async () => {
    const w = await world();
    const up = await upstream();
    await seedChannel(w.db.dataSource, up.baseUrl, up.apiKey);
    const pw = await w.start();
    const t = await seedTask(w.db.dataSource, w.account, 'nothing comes back [sim:empty]');
    await w.enqueue(pw, t);
    const end = await w.waitTerminal(t.id);
    expect(end.status).toBe('failed');
    expect(end.error?.message).toMatch(/no result/);
    await waitFor(async () => (await available(w)) === 1_000_000n, { what: 'refund' });
  });

  it('fails a moderated prompt at submit once, without retries or failover', async () => {
    const w = await world();
    const up1 = await upstream();
    const up2 = await upstream({ apiKey: up1.apiKey });
    await seedChannel(w.db.dataSource, up1.baseUrl, up1.apiKey, { priority: 5 });
    await seedChannel(w.db.dataSource, up2.baseUrl, up2.apiKey, { priority: 1 });
    const pw = await w.start();
    const t = await seedTask(w.db.dataSource, w.account, 'forbidden [sim:moderation]');
    await w.enqueue(pw, t);
    const end = await w.waitTerminal(t.id);
    expect(end.error).toMatchObject({ message: 'Banned prompt detected', type: 'moderation' });
    expect(up1.submits.get(t.id)).toBe(1);
    expect(up2.submits.get(t.id)).toBeUndefined();
    expect(w.settled).toEqual([t.id]);
  });

  it('reports a moderation failure found while polling as Banned prompt detected', async () => {
    const w = await world();
    const up = await upstream({ pollsToComplete: 1 });
    await seedChannel(w.db.dataSource, up.baseUrl, up.apiKey);
    const pw = await w.start();
    const t = await seedTask(w.db.dataSource, w.account, 'later [sim:moderation-late]');
    await w.enqueue(pw, t);
    expect((await w.waitTerminal(t.id)).error?.message).toBe('Banned prompt detected');
  });

  it('fails over to a second channel after repeated 503s on the first', async () => {
    const w = await world();
    const bad = await upstream({ submitStatus: 503 });
    const good = await upstream({ apiKey: 'sk-good-upstream', pollsToComplete: 2 });
    const badId = await seedChannel(w.db.dataSource, bad.baseUrl, bad.apiKey, { priority: 10 });
    const goodId = await seedChannel(w.db.dataSource, good.baseUrl, good.apiKey, { priority: 0 });
    const pw = await w.start({ failuresPerChannel: 2 });
    const t = await seedTask(w.db.dataSource, w.account, 'a horse');
    await w.enqueue(pw, t);
    const end = await w.waitTerminal(t.id);
    expect(end.status).toBe('completed');
    expect(end.channelId).toBe(goodId);
    expect(end.channelId).not.toBe(badId);
    expect(bad.submits.get(t.id)).toBe(2);
    expect(good.submits.get(t.id)).toBe(1);
  });

  describe("a channel's status_map over the built-in reading of a submit's status (docs/upstreams.md, Per-channel overrides)", () => {
    /** A first channel answering `status` to submits under `map`, a healthy second one; the task's end and both submit counts. */
    const run = async (status: number, map: Record<string, string>) => {
      const w = await world();
      const first = await upstream({ submitStatus: status });
      const second = await upstream({ apiKey: 'sk-second-upstream', pollsToComplete: 1 });
      await seedChannel(w.db.dataSource, first.baseUrl, first.apiKey, { priority: 10, settings: { status_map: map } });
      const secondId = await seedChannel(w.db.dataSource, second.baseUrl, second.apiKey, { priority: 0 });
      const pw = await w.start({ failuresPerChannel: 2 });
      const t = await seedTask(w.db.dataSource, w.account, 'a heron');
      await w.enqueue(pw, t);
      const end = await w.waitTerminal(t.id);
      return { end, secondId, first: first.submits.get(t.id), second: second.submits.get(t.id), settled: w.settled, taskId: t.id };
    };

    it('failover: a 400 (final when unmapped) leaves the channel at once for the next one', async () => {
      const r = await run(400, { '400': 'failover' });
      expect([r.end.status, r.end.channelId, r.first, r.second]).toEqual(['completed', r.secondId, 1, 1]);
    });

    it('retry: a 400 is retried on the same channel, then (its failures per channel spent) the next one takes it', async () => {
      const r = await run(400, { '4xx': 'retry' });
      expect([r.end.status, r.end.channelId, r.first, r.second]).toEqual(['completed', r.secondId, 2, 1]);
    });

    it('fail: a 503 (retried and failed over when unmapped) ends the task at once, refunded; the next channel is not asked', async () => {
      const r = await run(503, { '5xx': 'fail' });
      expect([r.end.status, r.first, r.second]).toEqual(['failed', 1, undefined]);
      expect(r.settled).toEqual([r.taskId]);
    });
  });

  it('opens the circuit of a channel that answers 429 to submits even while its running tasks poll successfully', async () => {
    const w = await world();
    const u = await upstream({ pollsToComplete: 1000 });
    const channelId = await seedChannel(w.db.dataSource, u.baseUrl, u.apiKey);
    const breaker = new CircuitBreaker({ failureThreshold: 3, cooldownMs: 60_000 });
    const pw = await w.start({ maxSubmitAttempts: 50 }, gateway(), breaker);
    const running = await seedTask(w.db.dataSource, w.account, 'keeps rendering [sim:never]');
    await w.enqueue(pw, running);
    await waitFor(() => ((u.polls.get(u.idOf(running.id)) ?? []).length >= 2 ? true : undefined), { timeoutMs: 10_000, what: 'the running task to be polled' });

    u.submitStatus = 429;
    const refused = await seedTask(w.db.dataSource, w.account, 'a horse');
    await w.enqueue(pw, refused);
    await waitFor(() => (breaker.state(channelId) === 'open' ? true : undefined), { timeoutMs: 15_000, what: 'the circuit to open' });
    expect(u.submits.get(refused.id)).toBe(3);
    // the running task is still polled successfully, and that does not close the circuit again
    const pollsAtOpen = (u.polls.get(u.idOf(running.id)) ?? []).length;
    await waitFor(() => ((u.polls.get(u.idOf(running.id)) ?? []).length >= pollsAtOpen + 3 ? true : undefined), {
      timeoutMs: 10_000,
      what: 'more successful polls',
    });
    expect(breaker.state(channelId)).toBe('open');
    expect(u.submits.get(refused.id)).toBe(3);
  });

  it('writes nothing on a steady poll whose native view did not change, though jsonb re-ordered its keys', async () => {
    const w = await world();
    await seedChannel(w.db.dataSource, 'http://127.0.0.1:9', 'k');
    // an upstream whose task stays in the art suite's MODAL state: the same native view on every poll, its keys in
    // an order jsonb does not keep (jsonb sorts keys by length first)
    let polls = 0;
    const steady: UpstreamAdapter = {
      protocol: 'gateway',
      submit: async () => ({ upstreamTaskId: 'up-steady' }),
      poll: async () => {
        polls++;
        return { status: 'processing', progress: 10, native: { status: 'MODAL', id: 'up-steady', buttons: [{ label: 'Vary', custom: 'v1' }] } };
      },
    };
    // every UPDATE of the task row, counted by Postgres itself
    await w.db.dataSource.query(`CREATE TABLE task_updates (n int)`);
    await w.db.dataSource.query(
      `CREATE FUNCTION count_task_update() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO task_updates VALUES (1); RETURN NEW; END $$`,
    );
    await w.db.dataSource.query(`CREATE TRIGGER task_update_counter AFTER UPDATE ON tasks FOR EACH ROW EXECUTE FUNCTION count_task_update()`);
    const updates = async (): Promise<number> => (await w.db.dataSource.query(`SELECT count(*)::int AS n FROM task_updates`))[0].n;
    const pw = await w.start({}, createAdapterRegistry([steady]));
    const t = await seedTask(w.db.dataSource, w.account, 'a modal art task');
    await w.enqueue(pw, t);
    await waitFor(async () => ((await w.tasks.get(t.id))?.native ? true : undefined), { what: 'the native view stored' });
    await waitFor(() => (polls >= 3 ? true : undefined), { what: 'three polls' });
    const before = await updates();
    const pollsBefore = polls;
    await waitFor(() => (polls >= pollsBefore + 4 ? true : undefined), { timeoutMs: 15_000, what: 'four more polls' });
    expect(await updates()).toBe(before);
    expect((await w.tasks.get(t.id))?.native).toEqual({ status: 'MODAL', id: 'up-steady', buttons: [{ label: 'Vary', custom: 'v1' }] });
  });

  it('fails with No available upstream when no channel serves the model', async () => {
    const w = await world();
    const pw = await w.start();
    const t = await seedTask(w.db.dataSource, w.account, 'nobody home');
    await w.enqueue(pw, t);
    expect((await w.waitTerminal(t.id)).error).toMatchObject({ message: 'No available upstream' });
    await waitFor(async () => (await available(w)) === 1_000_000n, { what: 'refund' });
  });

  it('fails a task that never finishes with Task timeout at its deadline and refunds it', async () => {
    const w = await world();
    const up = await upstream();
    await seedChannel(w.db.dataSource, up.baseUrl, up.apiKey);
    const pw = await w.start();
    const t = await seedTask(w.db.dataSource, w.account, 'forever [sim:never]', { deadlineMs: 1500 });
    await w.enqueue(pw, t);
    const end = await w.waitTerminal(t.id);
    expect(end.error).toMatchObject({ code: 'task_failed', message: 'Task timeout' });
    expect(up.polls.get(end.upstreamTaskId!)?.length).toBeGreaterThan(0);
    await waitFor(async () => (await available(w)) === 1_000_000n, { what: 'refund' });
  });

  it('lets exactly one of two racing sweeps time a task out and settle it', async () => {
    const w = await world();
    const pw = await w.start();
    const t = await seedTask(w.db.dataSource, w.account, 'race');
    await w.db.dataSource.query(`UPDATE tasks SET deadline_at = now() - interval '1 second' WHERE id = $1`, [t.id]);
    const [a, b] = await Promise.all([pw.sweeper.sweep(), pw.sweeper.sweep()]);
    expect(a.timedOut + b.timedOut).toBe(1);
    expect(w.settled).toEqual([t.id]);
    expect((await w.tasks.get(t.id))?.error?.message).toBe('Task timeout');
  });

  it('settles once when sweeps and a step race to end the same overdue task', async () => {
    const w = await world();
    const pw = await w.start();
    const t = await seedTask(w.db.dataSource, w.account, 'race');
    await w.db.dataSource.query(`UPDATE tasks SET deadline_at = now() - interval '1 second' WHERE id = $1`, [t.id]);
    await Promise.all([pw.sweeper.sweep(), pw.sweeper.sweep(), pw.processor.step(t.id, { taskId: t.id })]);
    expect(w.settled).toEqual([t.id]);
    const rows: Array<{ kind: string }> = await w.db.dataSource.query(`SELECT kind FROM ledger_entries WHERE task_id = $1 ORDER BY id`, [t.id]);
    expect(rows.map((r) => r.kind)).toEqual(['hold', 'release']);
  });
});

describe('pool sweeper and crash recovery', () => {
  it('re-adds a pending task whose job was lost, and one in processing straight to poll without resubmitting', async () => {
    const w = await world();
    const up = await upstream({ pollsToComplete: 2 });
    await seedChannel(w.db.dataSource, up.baseUrl, up.apiKey);
    const pw = await w.start({ orphanAfterMs: 0 });
    const lost = await seedTask(w.db.dataSource, w.account, 'never enqueued');
    const running = await seedTask(w.db.dataSource, w.account, 'job removed mid-flight');
    await w.enqueue(pw, running);
    await waitFor(async () => (await w.tasks.get(running.id))?.upstreamTaskId, { what: 'submitted' });
    await waitFor(() => polling(pw, running.id), { what: 'polling' });
    // its due poll is lost (as in a failover to a replica that had not seen it)
    await w.redis.zrem(pw.polls[0]!.keys.due, running.id);
    await w.redis.zrem(pw.polls[0]!.keys.claimed, running.id);

    const swept = await pw.sweeper.sweep();
    expect(swept.readded).toBe(2);
    const [a, b] = await Promise.all([w.waitTerminal(lost.id), w.waitTerminal(running.id)]);
    expect([a.status, b.status]).toEqual(['completed', 'completed']);
    expect(up.submits.get(running.id)).toBe(1);
    expect((await pw.sweeper.sweep()).readded).toBe(0);
  });

  it('strands no polling task in a reshard: 2 shards become 1, the sweep puts each task of the old shard 1 back on shard 0, without resubmitting', async () => {
    const w = await world();
    const up = await upstream({ pollsToComplete: 1_000_000 });
    await seedChannel(w.db.dataSource, up.baseUrl, up.apiKey);
    const two = await w.start({ shards: 2, orphanAfterMs: 0 });
    const list: TaskRecord[] = [];
    for (let i = 0; i < 40 && ![0, 1].every((s) => list.filter((t) => shardOf(t.id, 2) === s).length >= 2); i++) {
      list.push(await seedTask(w.db.dataSource, w.account, `resharded ${i}`));
    }
    for (const t of list)
      await two.queues[shardOf(t.id, 2)]!.add('task', { taskId: t.id, submitAttempts: 0, pollFailures: 0, excludedChannels: [] }, { jobId: t.id });
    await waitFor(
      async () => {
        for (const t of list) if (!(await two.polls[shardOf(t.id, 2)]!.present([t.id]))[0]) return undefined;
        return true;
      },
      { what: 'every task polling on its shard of two' },
    );
    await two.close(true);

    const one = await w.start({ shards: 1, orphanAfterMs: 0 });
    const onShard1 = list.filter((t) => shardOf(t.id, 2) === 1);
    expect((await one.sweeper.sweep()).readded).toBe(onShard1.length);
    await waitFor(async () => ((await one.polls[0]!.present(list.map((t) => t.id))).every(Boolean) ? true : undefined), {
      what: 'every task polling on the one shard',
    });
    for (const t of list) expect(up.submits.get(t.id)).toBe(1);
  });

  it('keeps the first upstream id when two submit steps of one task run at once (a reshard: its job on two shards), and cancels the second one’s upstream task', async () => {
    const w = await world();
    const up = await upstream({ pollsToComplete: 3 });
    await seedChannel(w.db.dataSource, up.baseUrl, up.apiKey);
    // Two runs of the submit step for one task, both inside the vendor call at once; each makes its own upstream
    // task (a vendor without idempotency: the second run sends another key), the second answers after the first.
    const real = createGatewayAdapter({ timeoutMs: 5000 });
    const entered: Array<() => void> = [];
    let runs = 0;
    const twice: UpstreamAdapter = {
      protocol: real.protocol,
      poll: (ch, id) => real.poll(ch, id),
      cancel: (ch, id, req) => real.cancel!(ch, id, req),
      submit: async (ch, req, ctx) => {
        const run = runs++;
        await new Promise<void>((resolve) => {
          entered.push(resolve);
          if (entered.length === 2) entered.forEach((r) => r());
        });
        if (run === 0) return real.submit(ch, req, ctx);
        await waitFor(async () => ((await w.tasks.get(ctx.taskId))?.upstreamTaskId ? true : undefined), { what: 'the first run recorded its id' });
        return real.submit(ch, req, { ...ctx, taskId: `${ctx.taskId}-second-run` });
      },
    };
    const pw = await w.start({ shards: 2, concurrency: 4 }, createAdapterRegistry([twice]));
    const t = await seedTask(w.db.dataSource, w.account, 'a cat submitted twice');
    for (const q of pw.queues) await q.add('task', { taskId: t.id, submitAttempts: 0, pollFailures: 0, excludedChannels: [] }, { jobId: t.id });

    const end = await w.waitTerminal(t.id, 20_000);
    await waitFor(() => (up.cancels.length === 1 ? true : undefined), { what: 'the second upstream task cancelled' });
    expect(runs).toBe(2);
    expect(end).toMatchObject({ status: 'completed', upstreamTaskId: up.idOf(t.id) });
    expect(up.cancels).toEqual([up.idOf(`${t.id}-second-run`)]);
    expect(up.cancels[0]).not.toBe(end.upstreamTaskId);
    await waitFor(() => (w.settledDone.includes(t.id) ? true : undefined), { timeoutMs: 5000, what: 'the settlement' });
    expect(w.settled.filter((id) => id === t.id)).toEqual([t.id]);
  });

  it('resumes the orphan walk where the last sweep stopped: a backlog larger than one sweep is covered in turn', async () => {
    const w = await world();
    const up = await upstream({ pollsToComplete: 10_000 });
    await seedChannel(w.db.dataSource, up.baseUrl, up.apiKey);
    const pw = await w.start({ orphanAfterMs: 1, maxRowsPerSweep: 2 });
    // five open tasks whose jobs were lost (never enqueued)
    for (let i = 0; i < 5; i++) await seedTask(w.db.dataSource, w.account, `lost ${i}`);
    const readded: number[] = [];
    for (let i = 0; i < 3; i++) readded.push((await pw.sweeper.sweep()).readded);
    // without the cursor the second sweep would look at the first two again (live jobs by then) and find nothing
    expect(readded).toEqual([2, 2, 1]);
    expect(await w.redis.exists(sweepCursorKey(queueKeyPrefix(w.prefix, QUEUES.image, 0)))).toBe(0);
  });

  it('leaves tasks with a live job alone and re-adds one whose job failed permanently', async () => {
    const w = await world();
    const up = await upstream({ pollsToComplete: 1000 });
    await seedChannel(w.db.dataSource, up.baseUrl, up.apiKey);
    // a job whose last attempt threw, failed by BullMQ itself (before the pool worker exists to take it)
    const dead = await seedTask(w.db.dataSource, w.account, 'job failed for good');
    const queue = createTaskQueue('image', w.redis, w.prefix);
    const throwing = new Worker(
      queue.name,
      async () => {
        throw new Error('the last attempt failed');
      },
      { connection: w.redis, prefix: queueKeyPrefix(w.prefix, QUEUES.image, 0) },
    );
    await queue.add('task', { taskId: dead.id }, { jobId: dead.id, attempts: 1 });
    await waitFor(async () => ((await queue.getJobState(dead.id)) === 'failed' ? true : undefined), { what: 'the job failed' });
    await throwing.close();
    await queue.close();

    const pw = await w.start({ orphanAfterMs: 0 });
    const live = await seedTask(w.db.dataSource, w.account, 'still rendering');
    await w.enqueue(pw, live);
    await waitFor(() => polling(pw, live.id), { what: 'polling' });

    expect((await pw.sweeper.sweep()).readded).toBe(1);
    expect(await pw.queue.getJobState(dead.id)).not.toBe('failed');
    expect(await polling(pw, live.id)).toBe(true);
    expect(up.submits.get(live.id)).toBe(1);
  });

  it('fails an overdue task that has no job from the sweeper with Task timeout', async () => {
    const w = await world();
    const pw = await w.start();
    const t = await seedTask(w.db.dataSource, w.account, 'orphan', { deadlineMs: -1000 });
    expect(await pw.sweeper.sweep()).toEqual({ timedOut: 1, readded: 0, failed: 0 });
    expect((await w.tasks.get(t.id))?.error?.message).toBe('Task timeout');
    expect(w.settled).toEqual([t.id]);
  });

  it('finishes tasks on a new worker after the first is closed without waiting, including one stuck mid-submit', async () => {
    const w = await world();
    const up = await upstream({ pollsToComplete: 3 });
    await seedChannel(w.db.dataSource, up.baseUrl, up.apiKey);
    // Worker A hangs forever inside submit for the "stuck" task: a process that died with the job active.
    const real = createGatewayAdapter({ timeoutMs: 5000 });
    let stuckEntered = false;
    const hanging: UpstreamAdapter = {
      protocol: real.protocol,
      poll: (ch, id) => real.poll(ch, id),
      submit: async (ch, req, ctx) => {
        if (String(req.upstreamBody.prompt).includes('stuck')) {
          stuckEntered = true;
          return new Promise<never>(() => undefined);
        }
        return real.submit(ch, req, ctx);
      },
    };
    const lock = { lockDuration: 1000, stalledInterval: 500 };
    const a = await w.start(lock, createAdapterRegistry([hanging]));
    const list = await Promise.all(['one', 'two', 'stuck'].map((p) => seedTask(w.db.dataSource, w.account, p)));
    for (const t of list) await w.enqueue(a, t);
    await waitFor(async () => stuckEntered && (await w.tasks.get(list[0].id))?.upstreamTaskId && (await w.tasks.get(list[1].id))?.upstreamTaskId, {
      what: 'tasks in flight',
    });
    await a.close(true);

    await w.start(lock);
    const ends = await Promise.all(list.map((t) => w.waitTerminal(t.id, 20_000)));
    expect(ends.map((t) => t.status)).toEqual(['completed', 'completed', 'completed']);
    expect(list.map((t) => up.submits.get(t.id))).toEqual([1, 1, 1]);
    // the winner enqueues the settlement just after the terminal row (and its view) is written, which is what
    // waitTerminal sees: wait for it (bounded) instead of racing it on a loaded machine
    await waitFor(() => w.settled.length >= list.length, { timeoutMs: 5000, what: 'settlements' }).catch(() => undefined);
    expect([...w.settled].sort()).toEqual(list.map((t) => t.id).sort());
  });
});
