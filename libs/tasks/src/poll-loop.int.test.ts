import type { TaskRecord } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { batchErrors } from '@gmg/observability';
import { DuePolls, queueKeyPrefix } from '@gmg/queue';
import { Redis } from 'ioredis';
import { TEST_REDIS_URL, deleteRedisPrefix, uniqueRedisPrefix, waitFor } from '@gmg/testing';
import { PollLoop } from './poll-loop';
import type { StepOutcome } from './task-step.processor';

/**
 * The claim loop on a real Redis, with the step replaced by a scripted one (the step machine has its own suites):
 * what the loop promises is that every claimed poll is settled — due again, dropped, or due again after a failed
 * step — with no more steps at once than its concurrency, and that stop() settles what was running.
 */
const logger = createLogger({ service: 'test', level: 'silent' });
let redis: Redis;
let prefix: string;
let polls: DuePolls;
let loop: PollLoop | undefined;

beforeEach(() => {
  redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  prefix = uniqueRedisPrefix();
  polls = new DuePolls(redis, queueKeyPrefix(prefix, 'gmg-image', 0), 30_000);
});

afterEach(async () => {
  await loop?.stop();
  loop = undefined;
  await deleteRedisPrefix(redis, prefix);
  redis.disconnect();
});

type Step = (taskId: string) => Promise<StepOutcome>;
const again = (ms: number): StepOutcome => ({ kind: 'delay', ms, data: { taskId: 'x', pollFailures: 0 }, next: 'poll' });

function start(step: Step, concurrency: number): { seen: string[]; maxAtOnce: () => number } {
  const seen: string[] = [];
  let now = 0;
  let max = 0;
  loop = new PollLoop(
    {
      pool: 'image',
      shards: [polls],
      logger,
      requeue: async () => undefined,
      tasks: { getMany: async (ids) => new Map(ids.map((id) => [id, { id } as TaskRecord])) },
      processor: {
        pollStep: async (taskId) => {
          seen.push(taskId);
          max = Math.max(max, ++now);
          try {
            return await step(taskId);
          } finally {
            now--;
          }
        },
      },
    },
    { concurrency, batch: 10, idleMaxMs: 20, errorBackoffMs: 60_000 },
  );
  loop.start();
  return { seen, maxAtOnce: () => max };
}

const where = async (id: string): Promise<{ due: number | null; claimed: boolean }> => {
  const [due, claimed] = await Promise.all([redis.zscore(polls.keys.due, id), redis.zscore(polls.keys.claimed, id)]);
  return { due: due === null ? null : Number(due), claimed: claimed !== null };
};

describe('poll loop', () => {
  it('steps every due poll once, never more at once than its concurrency, and makes each due again at its next time', async () => {
    const ids = Array.from({ length: 30 }, (_, i) => `t${String(i).padStart(2, '0')}`);
    for (const id of ids) await polls.add(id, Date.now() - 1, 0);
    const t0 = Date.now();
    const run = start(async () => {
      await new Promise((r) => setImmediate(r));
      return again(60_000);
    }, 4);
    await waitFor(async () => ((await redis.zcount(polls.keys.due, t0 + 60_000, '+inf')) === 30 ? true : undefined), {
      timeoutMs: 10_000,
      what: '30 polls due again',
    });
    expect([...run.seen].sort()).toEqual(ids);
    expect(run.maxAtOnce()).toBeLessThanOrEqual(4);
    expect(await redis.zcard(polls.keys.claimed)).toBe(0);
  });

  it('drops a poll whose task ended, and makes a poll whose step threw due again after the back-off (never lost)', async () => {
    await polls.add('ended', Date.now() - 1, 0);
    await polls.add('broken', Date.now() - 1, 0);
    const t0 = Date.now();
    start(async (id) => {
      if (id === 'broken') throw new Error('Postgres went away');
      return { kind: 'done' };
    }, 2);
    await waitFor(
      async () =>
        ((await where('broken')).due ?? 0) >= t0 + 60_000 && !(await where('ended')).claimed && (await where('ended')).due === null ? true : undefined,
      { timeoutMs: 10_000, what: 'both settled' },
    );
    expect(await where('broken')).toMatchObject({ claimed: false });
    expect(await where('ended')).toEqual({ due: null, claimed: false });
  });

  it('stop() lets a running step end and settles it before it resolves', async () => {
    await polls.add('slow', Date.now() - 1, 0);
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let started = false;
    start(async () => {
      started = true;
      await gate;
      return again(60_000);
    }, 1);
    await waitFor(() => started || undefined, { timeoutMs: 5_000, what: 'the step started' });
    expect((await where('slow')).claimed).toBe(true);
    const stopped = loop!.stop();
    release();
    await stopped;
    expect(await where('slow')).toMatchObject({ claimed: false });
    expect((await where('slow')).due).not.toBeNull();
  });
  it('has a heartbeat for liveness: fresh while the loop turns, ageing while it cannot claim, 0 once stopped', async () => {
    await polls.add('stuck', Date.now() - 1, 0);
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let started = false;
    start(async () => {
      started = true;
      await gate; // a step that never ends: the loop's only slot stays taken, so it cannot claim
      return again(60_000);
    }, 1);
    await waitFor(() => started || undefined, { timeoutMs: 5_000, what: 'the step started' });
    const stuckFor = await waitFor(() => (loop!.sinceLastClaimMs() > 500 ? loop!.sinceLastClaimMs() : undefined), {
      timeoutMs: 5_000,
      what: 'the heartbeat ageing while no claim can run',
    });
    expect(stuckFor).toBeGreaterThan(500);
    release();
    // free again: it claims every idleMaxMs (20 ms here) — the heartbeat is fresh within a few turns
    await waitFor(() => loop!.sinceLastClaimMs() < 100 || undefined, { timeoutMs: 5_000, what: 'the heartbeat fresh again' });
    await loop!.stop();
    expect(loop!.sinceLastClaimMs()).toBe(0);
  });

  it('a batch of due polls whose rows cannot be read is told (a line and gmg_batch_errors_total{batch="poll_rows"}) and due again after the back-off', async () => {
    const counted = async () => (await batchErrors.get()).values.find((v) => v.labels.batch === 'poll_rows')?.value ?? 0;
    const before = await counted();
    const lines: Array<Record<string, unknown>> = [];
    const told = createLogger({ service: 'test', destination: { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) } });
    await polls.add('a', Date.now() - 1, 0);
    const claimedAt = Date.now();
    loop = new PollLoop(
      {
        pool: 'image',
        shards: [polls],
        logger: told,
        requeue: async () => undefined,
        tasks: { getMany: () => Promise.reject(Object.assign(new Error('connection lost'), { code: '57P01' })) },
        processor: { pollStep: () => Promise.reject(new Error('no step without a row')) },
      },
      { concurrency: 4, batch: 10, idleMaxMs: 20, errorBackoffMs: 60_000 },
    );
    loop.start();
    // settled back: not claimed, due a back-off (60 s) from the claim, never dropped
    const settled = await waitFor(
      async () => {
        const w = await where('a');
        return !w.claimed && w.due !== null && w.due >= claimedAt + 60_000 ? w : undefined;
      },
      { timeoutMs: 5_000, what: 'the poll due again after the back-off' },
    );
    expect(settled.due).toBeLessThan(Date.now() + 60_000 + 1);
    expect(await counted()).toBe(before + 1);
    expect(lines).toEqual([expect.objectContaining({ level: 40, batch: 'poll_rows', pool: 'image', polls: 1, code: '57P01', err: 'connection lost' })]);
  });
});
