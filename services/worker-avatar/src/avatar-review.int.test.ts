import type { NormalizedRequest } from '@gmg/contracts';
import {
  AccountRepository,
  ApiKeyRepository,
  AssetGroupRepository,
  AssetRepository,
  ChannelRepository,
  TaskRepository,
  newAssetGroupId,
  newAssetId,
  newTaskId,
  settleTask,
} from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createRedis, type Redis } from '@gmg/queue';
import { TaskLifecycle, TaskViewStore } from '@gmg/tasks';
import { TEST_REDIS_URL, createTestDatabase, deleteRedisPrefix, uniqueRedisPrefix, type TestDatabase } from '@gmg/testing';
import { AvatarReviewHandler } from './avatar-review.handler';

/**
 * The avatar completion step against real Postgres and Redis: per-asset decisions, exactly-once partial capture, and
 * what a crash or a lost race leaves behind (nothing usable that was not paid for, no money lost).
 */
describe('avatar review completion (real Postgres)', () => {
  let db: TestDatabase;
  let redis: Redis;
  let prefix: string;
  let channelId: string;
  const PRICE = 300n;
  const settled: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('gmg_avatar_review');
    redis = createRedis(TEST_REDIS_URL, 'client');
    prefix = uniqueRedisPrefix();
    channelId = (await new ChannelRepository(db.dataSource).create({ name: 'sim', baseUrl: 'http://127.0.0.1:1' })).id;
  });
  afterAll(async () => {
    await deleteRedisPrefix(redis, prefix);
    await redis.quit();
    await db?.drop();
  });

  const ds = () => db.dataSource;
  const lifecycle = () =>
    new TaskLifecycle(
      new TaskRepository(ds()),
      new TaskViewStore(redis, prefix),
      { enqueueSettlement: async (id) => void settled.push(id) },
      createLogger({ service: 'test', level: 'silent' }),
      new AvatarReviewHandler(new AssetRepository(ds())),
    );

  /** A batch of 3 as the edge writes it (hold, task, group, Pending assets), submitted upstream on `channelId`. */
  async function batch(): Promise<{ taskId: string; accountId: string; assetIds: string[] }> {
    const account = await new AccountRepository(ds()).create({ name: 'avatar' });
    await new AccountRepository(ds()).topup(account.id, 1000n);
    const { key } = await new ApiKeyRepository(ds()).create({ accountId: account.id });
    const taskId = newTaskId();
    const request = {
      model: 'motion-2.0-avatar',
      requestedModel: 'motion-2.0-avatar',
      pool: 'avatar',
      upstreamBody: {},
      derived: {},
      billing: [],
      expected: { kind: 'assets', count: 3 },
    } as NormalizedRequest;
    await new TaskRepository(ds()).createWithHold({
      id: taskId,
      accountId: account.id,
      apiKeyId: key.id,
      model: request.model,
      requestedModel: request.model,
      pool: 'avatar',
      request,
      price: PRICE,
      priceSnapshot: {},
      deadlineAt: new Date(Date.now() + 60_000),
    });
    const groupId = newAssetGroupId();
    await new AssetGroupRepository(ds()).create({ id: groupId, accountId: account.id, name: 'g', description: '', autoCreated: true });
    const assetIds = [0, 1, 2].map(() => newAssetId());
    await new AssetRepository(ds()).insertBatch(
      account.id,
      groupId,
      taskId,
      assetIds.map((id, i) => ({
        id,
        position: i,
        assetType: 'Image',
        name: `n${i}`,
        url: 'https://cdn.example.com/a.png',
        projectName: 'default',
      })),
    );
    await new TaskRepository(ds()).markSubmitted(taskId, channelId, 'task_upstream');
    return { taskId, accountId: account.id, assetIds };
  }
  const upstream = {
    assets: [
      { asset_id: 'up_0', asset_url: 'asset://up_0', status: 'Active' },
      { asset_id: 'up_1', asset_url: 'asset://up_1', status: 'Rejected', reason: 'moderation' },
      { asset_id: 'up_2', asset_url: 'asset://up_2', status: 'Active' },
    ],
  };
  const money = async (accountId: string) => {
    const [a] = await ds().query(`SELECT available, held, spent FROM accounts WHERE id = $1`, [accountId]);
    return { available: BigInt(a.available), held: BigInt(a.held), spent: BigInt(a.spent) };
  };

  it('records each decision, completes with our ids, and settles 2 of 3 exactly once even when the step ran twice', async () => {
    const b = await batch();
    const task = (await new TaskRepository(ds()).get(b.taskId))!;
    // a crash after the completion step and before the terminal transition: the resumed job runs it again
    await new AvatarReviewHandler(new AssetRepository(ds())).onComplete(task, upstream);
    const rec = await lifecycle().complete(b.taskId, upstream);
    expect(rec?.status).toBe('completed');
    expect(rec!.captureAmount).toBe(200n);
    expect(rec!.result!.assets!.map((a) => a.asset_id)).toEqual(b.assetIds);
    expect(rec!.result!.usable_assets!.map((a) => a.asset_id)).toEqual([b.assetIds[0], b.assetIds[2]]);
    expect(await lifecycle().complete(b.taskId, upstream)).toBeNull();

    const usable = await new AssetRepository(ds()).usable(b.accountId, b.assetIds);
    expect([...usable.keys()].sort()).toEqual([b.assetIds[0], b.assetIds[2]].sort());
    expect(usable.get(b.assetIds[0]!)).toEqual({ id: b.assetIds[0], channelId, upstreamAssetUrl: 'asset://up_0' });

    const outcomes = await Promise.all([1, 2, 3].map(() => settleTask(ds(), b.taskId)));
    expect(outcomes.filter((o) => o === 'captured')).toHaveLength(1);
    const entries = await ds().query(`SELECT kind, amount FROM ledger_entries WHERE task_id = $1 ORDER BY id`, [b.taskId]);
    expect(entries).toEqual([
      { kind: 'hold', amount: '300' },
      { kind: 'capture', amount: '200' },
      { kind: 'release', amount: '100' },
    ]);
    expect(await money(b.accountId)).toEqual({ available: 800n, held: 0n, spent: 200n });
  });

  it('a batch that fails after the step recorded approvals leaves nothing usable and releases everything', async () => {
    const b = await batch();
    const task = (await new TaskRepository(ds()).get(b.taskId))!;
    await new AvatarReviewHandler(new AssetRepository(ds())).onComplete(task, upstream);
    // the timeout sweeper wins the race before the completion's terminal transition
    await lifecycle().fail(b.taskId, 'Task timeout', 'timeout');
    expect(await lifecycle().complete(b.taskId, upstream)).toBeNull();
    expect((await new AssetRepository(ds()).usable(b.accountId, b.assetIds)).size).toBe(0);
    const listed = await new AssetRepository(ds()).forTask(b.taskId);
    expect(listed.map((a) => [a.status, a.reason])).toEqual([
      ['Failed', 'Task timeout'],
      ['Failed', 'Task timeout'],
      ['Failed', 'Task timeout'],
    ]);
    expect(await settleTask(ds(), b.taskId)).toBe('released');
    expect(await money(b.accountId)).toEqual({ available: 1000n, held: 0n, spent: 0n });
  });
});
