import { Redis } from 'ioredis';
import { TEST_REDIS_URL, deleteRedisPrefix, uniqueRedisPrefix } from '@gmg/testing';
import { DuePolls } from './due-polls';
import { queueKeyPrefix } from './keys';

const LEASE_MS = 10_000;
let redis: Redis;
let prefix: string;
let polls: DuePolls;

beforeEach(() => {
  redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  prefix = uniqueRedisPrefix();
  polls = new DuePolls(redis, queueKeyPrefix(prefix, 'gmg-image', 0), LEASE_MS);
});

afterEach(async () => {
  await deleteRedisPrefix(redis, prefix);
  redis.disconnect();
});

describe('due polls of a shard', () => {
  it('hands out due polls oldest first in batches, names the next due time, and keeps every poll in one of its two sets', async () => {
    const t0 = 1_000_000;
    for (let i = 0; i < 5; i++) await polls.add(`task_${i}`, t0 + i * 100, 0);
    await polls.add('task_later', t0 + 60_000, 0);

    const first = await polls.claim(t0 + 250, 2);
    expect(first.polls.map((p) => [p.taskId, p.dueAt, p.reclaimed])).toEqual([
      ['task_0', t0, false],
      ['task_1', t0 + 100, false],
    ]);
    // a full batch: the caller claims again at once, no sleep hint needed
    expect(first.nextDueAt).toBeNull();
    const second = await polls.claim(t0 + 250, 10);
    expect(second.polls.map((p) => p.taskId)).toEqual(['task_2']);
    expect(second.nextDueAt).toBe(t0 + 300);
    // claimed polls stay visible to the orphan sweep; one never added is not
    expect(await polls.present(['task_0', 'task_2', 'task_4', 'task_later', 'nope'])).toEqual([true, true, true, true, false]);
    expect(await polls.counts(t0 + 250)).toMatchObject({ waiting: 3, overdue: 0, claimed: 3, oldestDueAt: t0 + 300 });
  });

  it('settles a batch in one call: due again at its next time, dropped when ended, failures kept only while there are some', async () => {
    const now = 5_000_000;
    for (const id of ['a', 'b', 'c']) await polls.add(id, now - 10, 0);
    const { polls: got } = await polls.claim(now, 10);
    expect(got).toHaveLength(3);
    await polls.settle([
      { taskId: 'a', dueAt: now + 5000, failures: 0, previousFailures: 0 },
      { taskId: 'b', dueAt: now + 7000, failures: 2, previousFailures: 0 },
      { taskId: 'c', failures: 0, previousFailures: 0 },
    ]);
    expect(await redis.zcard(polls.keys.claimed)).toBe(0);
    expect(await redis.zrange(polls.keys.due, 0, -1, 'WITHSCORES')).toEqual(['a', String(now + 5000), 'b', String(now + 7000)]);
    expect(await redis.hgetall(polls.keys.failures)).toEqual({ b: '2' });

    const again = await polls.claim(now + 10_000, 10);
    expect(again.polls.find((p) => p.taskId === 'b')?.failures).toBe(2);
    // b polled fine this time: its count goes; a task that ends takes its count with it
    await polls.settle([
      { taskId: 'a', failures: 0, previousFailures: 0 },
      { taskId: 'b', dueAt: now + 15_000, failures: 0, previousFailures: 2 },
    ]);
    expect(await redis.exists(polls.keys.failures)).toBe(0);
    expect(await redis.zrange(polls.keys.due, 0, -1)).toEqual(['b']);
  });

  it('gives a claim that was never settled (its worker died) to the next claimer after the lease, not before', async () => {
    const now = 9_000_000;
    await polls.add('orphaned', now - 1, 3);
    expect((await polls.claim(now, 10)).polls.map((p) => p.taskId)).toEqual(['orphaned']);
    // the claiming worker is gone: nothing settles it
    expect((await polls.claim(now + LEASE_MS - 1, 10)).polls).toEqual([]);
    const back = await polls.claim(now + LEASE_MS, 10);
    expect(back.polls).toEqual([{ taskId: 'orphaned', dueAt: now, failures: 3, reclaimed: true }]);
    // taken again, with a new claim time: a second claimer does not get it too
    expect((await polls.claim(now + LEASE_MS + 1, 10)).polls).toEqual([]);
  });

  it('drops a waiting poll of a cancelled task (and its failure count), and leaves a claimed one to its step', async () => {
    const now = 12_000_000;
    await polls.add('waiting', now + 5000, 2);
    await polls.add('claimed', now - 1, 0);
    await polls.claim(now, 10);
    expect(await polls.remove('waiting')).toBe(true);
    expect(await polls.remove('claimed')).toBe(false);
    expect(await polls.remove('unknown')).toBe(false);
    expect(await polls.present(['waiting', 'claimed'])).toEqual([false, true]);
    expect(await redis.hget(polls.keys.failures, 'waiting')).toBeNull();
  });

  it('keeps the trace context a task was handed over with for each claim, and drops it when the task ends', async () => {
    const now = 15_000_000;
    const trace = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    await polls.add('traced', now - 2, 0, trace);
    await polls.add('plain', now - 1, 0);
    const first = await polls.claim(now, 10);
    expect(first.polls.map((p) => [p.taskId, p.trace])).toEqual([
      ['traced', trace],
      ['plain', undefined],
    ]);
    // a steady settle leaves it; the next claim still has it
    await polls.settle([
      { taskId: 'traced', dueAt: now + 10, failures: 0, previousFailures: 0 },
      { taskId: 'plain', failures: 0, previousFailures: 0 },
    ]);
    expect((await polls.claim(now + 10, 10)).polls[0]?.trace).toEqual(trace);
    await polls.settle([{ taskId: 'traced', failures: 0, previousFailures: 0 }]);
    expect(await redis.exists(polls.keys.trace)).toBe(0);
  });

  it('settles a batch larger than one script may carry (a worker with a high concurrency) in full', async () => {
    const now = 20_000_000;
    const ids = Array.from({ length: 5_000 }, (_, i) => `bulk${i}`);
    for (let i = 0; i < ids.length; i += 400) {
      await polls.settle(ids.slice(i, i + 400).map((taskId) => ({ taskId, dueAt: now - 1, failures: 0, previousFailures: 0 })));
    }
    await polls.settle(ids.map((taskId) => ({ taskId, dueAt: now + 5000, failures: 1, previousFailures: 0 })));
    expect(await redis.zcount(polls.keys.due, now + 5000, now + 5000)).toBe(5_000);
    expect(await redis.hlen(polls.keys.failures)).toBe(5_000);
  });
});

describe('a callback nudge', () => {
  it('moves a waiting poll earlier to now, never later, never adds one, and leaves an unknown task alone', async () => {
    const now = 7_000_000;
    await polls.add('waits', now + 30_000, 0);
    expect(await polls.nudge('waits', now)).toBe('moved');
    expect(await redis.zscore(polls.keys.due, 'waits')).toBe(String(now));
    // a second nudge, later: stays at the earlier time
    expect(await polls.nudge('waits', now + 1000)).toBe('waiting');
    expect(await redis.zscore(polls.keys.due, 'waits')).toBe(String(now));
    // a task not on the poll path (ended): nothing written anywhere
    expect(await polls.nudge('gone', now)).toBe('absent');
    expect(await redis.zscore(polls.keys.due, 'gone')).toBeNull();
    expect(await redis.exists(polls.keys.nudged)).toBe(0);
  });

  it('a nudge while the poll runs (claimed) makes its settle due by the nudge; an ended one just drops the mark', async () => {
    const now = 8_000_000;
    await polls.add('running', now - 5, 0);
    await polls.add('ending', now - 5, 0);
    expect((await polls.claim(now, 10)).polls.map((p) => p.taskId).sort()).toEqual(['ending', 'running']);
    expect(await polls.nudge('running', now + 100)).toBe('claimed');
    expect(await polls.nudge('ending', now + 100)).toBe('claimed');
    // the running poll saw "processing" and asks for the next one in 30 s; the nudge wins
    await polls.settle([
      { taskId: 'running', dueAt: now + 30_000, failures: 0, previousFailures: 0 },
      { taskId: 'ending', failures: 0, previousFailures: 0 },
    ]);
    expect(await redis.zrange(polls.keys.due, 0, -1, 'WITHSCORES')).toEqual(['running', String(now + 100)]);
    expect(await redis.exists(polls.keys.nudged)).toBe(0);
    // a later settle of it is unaffected
    await polls.claim(now + 200, 10);
    await polls.settle([{ taskId: 'running', dueAt: now + 60_000, failures: 0, previousFailures: 0 }]);
    expect(await redis.zscore(polls.keys.due, 'running')).toBe(String(now + 60_000));
  });
});
