import type { TaskRecord } from '@gmg/db';
import { createRedis, type Redis } from '@gmg/queue';
import { deleteRedisPrefix, uniqueRedisPrefix, TEST_REDIS_TARGET } from '@gmg/testing';
import { TaskViewStore, TASK_VIEW_TTL_SECONDS } from './task-view.store';

let redis: Redis;
let prefix: string;
let store: TaskViewStore;

beforeAll(() => {
  redis = createRedis(TEST_REDIS_TARGET);
  prefix = uniqueRedisPrefix();
  store = new TaskViewStore(redis, prefix);
});

afterAll(async () => {
  await deleteRedisPrefix(redis, prefix);
  await redis.quit();
});

let n = 0;
const T0 = Date.parse('2025-11-22T00:00:00Z');

/** A task row as read at `atMs` past T0. */
function row(id: string, over: Partial<TaskRecord>, atMs: number): TaskRecord {
  return {
    id,
    accountId: '00000000-0000-4000-8000-000000000001',
    apiKeyId: '00000000-0000-4000-8000-000000000002',
    model: 'lumen-2-flex',
    requestedModel: 'lumen-2-flex',
    pool: 'image',
    status: 'pending',
    progress: 0,
    request: {} as TaskRecord['request'],
    price: 1000n,
    priceSnapshot: {},
    channelId: null,
    upstreamTaskId: null,
    result: null,
    error: null,
    createdAt: new Date(T0),
    startedAt: null,
    completedAt: null,
    deadlineAt: new Date(T0 + 3_600_000),
    updatedAt: new Date(T0 + atMs),
    settledAt: null,
    ...over,
  };
}
const newId = () => `task_viewtest${++n}`;
const completed = (id: string, atMs: number) =>
  row(id, { status: 'completed', progress: 100, result: { images: [{ url: 'http://127.0.0.1/a.png' }] }, completedAt: new Date(T0 + atMs) }, atMs);

describe('TaskViewStore.write (compare-and-set on the view version)', () => {
  it('never replaces a completed view with an older processing one (a poll that read the row before completion)', async () => {
    const id = newId();
    const staleRead = row(id, { status: 'processing', progress: 40 }, 1_000);
    await store.write(completed(id, 2_000));
    const stored = await store.write(staleRead);
    expect(stored.task).toMatchObject({ status: 'completed', progress: 100 });
    expect((await store.read(id))?.task).toMatchObject({ status: 'completed', progress: 100, result: { images: [{ url: 'http://127.0.0.1/a.png' }] } });
  });

  it('never replaces a terminal view with a processing one even when its updated_at is later', async () => {
    const id = newId();
    await store.write(row(id, { status: 'failed', error: { code: 'task_failed', message: 'x' }, completedAt: new Date(T0 + 1_000) }, 1_000));
    await store.write(row(id, { status: 'processing', progress: 99 }, 9_000));
    expect((await store.read(id))?.task).toMatchObject({ status: 'failed', cost: 0 });
  });

  it('replaces an older progress with a newer one, keeps the newer against a late older write, and reads the last accepted', async () => {
    const id = newId();
    await store.write(row(id, {}, 0));
    await store.write(row(id, { status: 'processing', progress: 20 }, 1_000));
    expect((await store.read(id))?.task).toMatchObject({ status: 'processing', progress: 20 });
    await store.write(row(id, { status: 'processing', progress: 60 }, 2_000));
    await store.write(row(id, { status: 'processing', progress: 20 }, 1_000));
    await store.write(row(id, {}, 0));
    const view = await store.read(id);
    expect(view).toEqual({
      accountId: '00000000-0000-4000-8000-000000000001',
      pool: 'image',
      task: expect.objectContaining({ status: 'processing', progress: 60 }),
    });
    expect(await redis.ttl(store.key(id))).toBeGreaterThan(TASK_VIEW_TTL_SECONDS.open - 60);
  });

  it('accepts a rewrite of a terminal view with the same version (billing after settlement)', async () => {
    const id = newId();
    const done = completed(id, 2_000);
    await store.write(done);
    const rewritten = { images: [{ url: 'http://127.0.0.1/rewritten.png' }] };
    const again = await store.write({ ...done, result: rewritten, settledAt: new Date(T0 + 3_000) });
    expect(again.task.result).toEqual(rewritten);
    expect((await store.read(id))?.task.result).toEqual(rewritten);
    // a terminal view lives an hour, not as long as an open one (bounded memory: docs/operations.md)
    const ttl = await redis.ttl(store.key(id));
    expect(ttl).toBeGreaterThan(TASK_VIEW_TTL_SECONDS.terminal - 60);
    expect(ttl).toBeLessThanOrEqual(TASK_VIEW_TTL_SECONDS.terminal);
  });

  it('replaces a value stored without a version (written before versions existed)', async () => {
    const id = newId();
    await redis.set(store.key(id), JSON.stringify(store.toView(completed(id, 5_000))));
    await store.write(row(id, { status: 'processing', progress: 10 }, 1_000));
    expect((await store.read(id))?.task).toMatchObject({ status: 'processing', progress: 10 });
  });
});

describe('TaskViewStore.write with ifAbsent (re-warm after a Postgres fallback)', () => {
  it('writes the view when none is stored', async () => {
    const id = newId();
    await store.write(row(id, { status: 'processing', progress: 30 }, 1_000), { ifAbsent: true });
    expect((await store.read(id))?.task).toMatchObject({ status: 'processing', progress: 30 });
  });

  it('leaves a stored view alone, even an older one, and returns it', async () => {
    const id = newId();
    await store.write(completed(id, 2_000));
    const out = await store.write(row(id, { status: 'processing', progress: 40 }, 1_000), { ifAbsent: true });
    expect(out.task.status).toBe('completed');
    expect((await store.read(id))?.task.status).toBe('completed');
  });
});
