import { ChannelRepository, TaskRepository, settleTask, type TaskRecord } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createRedis, type Redis } from '@gmg/queue';
import { createTestDatabase, deleteRedisPrefix, uniqueRedisPrefix, waitFor, TEST_REDIS_URL, type TestDatabase } from '@gmg/testing';
import { createAdapterRegistry, createGatewayAdapter } from '@gmg/upstream';
import { startPoolWorker, type PoolWorker } from './pool-worker';
import { NO_MEDIA_KEEPER } from './no-media-keeper.test-kit';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.test-kit';
import { seedAccount, seedTask, type SeededAccount } from './seed-task.test-kit';

/**
 * A channel of three keys through the real step machine (issue 37 items 1-2): keys share the traffic, a task's polls
 * use the key that submitted it, a key the vendor revokes is set aside with the vendor's message and a rate-limited
 * one cools, no task fails, and the probe brings them back once the vendor heals them.
 */
const logger = createLogger({ service: 'test', level: 'silent' });
const KEYS = ['sk-vendor-key-alpha-0001', 'sk-vendor-key-bravo-0002', 'sk-vendor-key-charl-0003'];

let db: TestDatabase;
let redis: Redis;
let prefix: string;
let up: FakeUpstream;
let pw: PoolWorker;
let account: SeededAccount;
let channelId: string;
let tasks: TaskRepository;

beforeAll(async () => {
  db = await createTestDatabase();
  redis = createRedis(TEST_REDIS_URL, 'worker');
  prefix = uniqueRedisPrefix();
  up = await startFakeUpstream({ apiKeys: KEYS, pollsToComplete: 2 });
  tasks = new TaskRepository(db.dataSource);
  account = await seedAccount(db.dataSource);
  channelId = (await new ChannelRepository(db.dataSource).create({ name: 'three-keys', baseUrl: up.baseUrl, apiKeys: KEYS.map((secret) => ({ secret })) })).id;
  pw = await startPoolWorker(
    {
      pool: 'image',
      ds: db.dataSource,
      redis,
      prefix,
      adapters: createAdapterRegistry([createGatewayAdapter({ timeoutMs: 5000 })]),
      keeper: NO_MEDIA_KEEPER,
      logger,
      settlements: { enqueueSettlement: async (id) => void (await settleTask(db.dataSource, id)) },
      channelBackOff: { baseMs: 300, maxMs: 2000 },
    },
    { concurrency: 5, pollIntervalScale: 0.05, sweepIntervalMs: 0, retryBaseMs: 100 },
  );
}, 60_000);
afterAll(async () => {
  await pw?.close(true);
  await up?.close();
  await deleteRedisPrefix(redis, prefix);
  await redis?.quit();
  await db?.drop();
});

const keyIds = async (): Promise<Map<string, string>> => {
  const rows: Array<{ id: string; secret: string }> = await db.dataSource.query(`SELECT id, secret FROM channel_keys WHERE channel_id = $1`, [channelId]);
  return new Map(rows.map((r) => [r.id, r.secret]));
};
const keyRow = async (secret: string) =>
  (await db.dataSource.query(`SELECT id, status, disabled_reason, last_error FROM channel_keys WHERE secret = $1`, [secret]))[0] as {
    id: string;
    status: string;
    disabled_reason: string | null;
    last_error: string | null;
  };

async function runTasks(n: number, label: string): Promise<TaskRecord[]> {
  const list = await Promise.all(Array.from({ length: n }, (_, i) => seedTask(db.dataSource, account, `${label} ${i}`)));
  for (const t of list) await pw.queue.add('task', { taskId: t.id, submitAttempts: 0, pollFailures: 0, excludedChannels: [] }, { jobId: t.id });
  return Promise.all(
    list.map((t) =>
      waitFor(
        async () => {
          const r = await tasks.get(t.id);
          return r && (r.status === 'completed' || r.status === 'failed') ? r : undefined;
        },
        { timeoutMs: 20_000, what: `task ${t.id} to end` },
      ),
    ),
  );
}

it('spreads tasks over the keys; each task records its key and is polled with it', async () => {
  const done = await runTasks(12, 'spread');
  expect(done.map((t) => t.status)).toEqual(done.map(() => 'completed'));
  const ids = await keyIds();
  const used = new Set(done.map((t) => t.channelKeyId));
  expect([...used].every((k) => k !== null && ids.has(k!))).toBe(true);
  expect(used.size).toBeGreaterThan(1);
  for (const t of done) {
    const polls = up.keysSeen.filter((s) => s.method === 'GET' && s.path === `/v1/tasks/${t.upstreamTaskId}`);
    expect(polls.length).toBeGreaterThan(0);
    expect(new Set(polls.map((p) => p.key))).toEqual(new Set([ids.get(t.channelKeyId!)]));
  }
});

it('a revoked key is set aside with the vendor message and a rate-limited one cools; no task fails; the probe brings both back', async () => {
  const [revoked, limited] = KEYS;
  up.revoke(revoked!, 'This API key has been revoked by its owner');
  up.rateLimit(limited!);
  const done = await runTasks(12, 'storm');
  expect(done.map((t) => t.status)).toEqual(done.map(() => 'completed'));
  const r = await keyRow(revoked!);
  expect(r.status).toBe('disabled');
  expect(r.disabled_reason).toContain('This API key has been revoked by its owner');
  expect((await keyRow(limited!)).last_error).toContain('Rate limit reached for this key');
  // tasks that ended after the revocation were not submitted with the revoked key
  expect(done.filter((t) => t.channelKeyId === r.id)).toEqual([]);

  // still refused: the probe's trial leaves it disabled
  await waitFor(async () => (await pw.probe.tick()) > 0 || undefined, { timeoutMs: 5000, what: 'a due trial' });
  expect((await keyRow(revoked!)).status).toBe('disabled');

  up.heal(revoked!);
  up.heal(limited!);
  await waitFor(
    async () => {
      await pw.probe.tick();
      return (await keyRow(revoked!)).status === 'active' || undefined;
    },
    { timeoutMs: 10_000, what: 'the probe to bring the revoked key back' },
  );
  const since = up.keysSeen.length;
  const after = await runTasks(18, 'healed');
  expect(after.map((t) => t.status)).toEqual(after.map(() => 'completed'));
  const submitKeys = new Set(
    up.keysSeen
      .slice(since)
      .filter((s) => s.method === 'POST')
      .map((s) => s.key),
  );
  expect(submitKeys).toEqual(new Set(KEYS));
});
