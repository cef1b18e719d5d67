import { createTestDatabase, testTask, type TestDatabase } from '@gmg/testing';
import { AccountRepository } from './account.repository';
import { ApiKeyRepository } from './api-key.repository';
import { newAssetGroupId } from './asset-group.repository';
import { newAssetId } from './asset.repository';
import { settleMany, settleTask } from './ledger.repository';
import { TaskRecoveryRepository } from './task-recovery.repository';
import { TaskRepository, type NewTask } from './task.repository';

describe('task money path', () => {
  let db: TestDatabase;
  let tasks: TaskRepository;
  let accounts: AccountRepository;
  let keyId: string;
  let accountId: string;

  const newTask = (price: bigint): NewTask => testTask({ accountId, apiKeyId: keyId }, price);
  const balance = async () => {
    const a = (await accounts.get(accountId))!;
    return { available: a.available, held: a.held, spent: a.spent };
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    tasks = new TaskRepository(db.dataSource);
    accounts = new AccountRepository(db.dataSource);
  });
  afterAll(async () => {
    await db?.drop();
  });
  beforeEach(async () => {
    accountId = (await accounts.create({ name: 't' })).id;
    keyId = (await new ApiKeyRepository(db.dataSource).create({ accountId })).key.id;
  });

  it('holds on create, captures once on completion however often settlement is delivered', async () => {
    await accounts.topup(accountId, 1000n);
    const t = await tasks.createWithHold(newTask(300n));
    expect(await balance()).toEqual({ available: 700n, held: 300n, spent: 0n });
    expect(await settleTask(db.dataSource, t.id)).toBe('not_terminal');
    expect(await tasks.complete(t.id, { images: [{ url: 'http://x/1.jpg' }] })).not.toBeNull();
    expect(await tasks.fail(t.id, { code: 'task_failed', message: 'late' })).toBeNull();
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => settleTask(db.dataSource, t.id)));
    expect(outcomes.filter((o) => o === 'captured')).toHaveLength(1);
    expect(await balance()).toEqual({ available: 700n, held: 0n, spent: 300n });
  });

  it('releases a failed task: cost nets to zero', async () => {
    await accounts.topup(accountId, 1000n);
    const t = await tasks.createWithHold(newTask(400n));
    await tasks.fail(t.id, { code: 'task_failed', message: 'boom' });
    expect(await settleTask(db.dataSource, t.id)).toBe('released');
    expect(await settleTask(db.dataSource, t.id)).toBe('duplicate');
    expect(await balance()).toEqual({ available: 1000n, held: 0n, spent: 0n });
  });

  it('refuses a hold above the balance with payment_required and writes nothing', async () => {
    await accounts.topup(accountId, 100n);
    await expect(tasks.createWithHold(newTask(101n))).rejects.toMatchObject({ type: 'payment_required' });
    const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [accountId]);
    const [{ m }] = await db.dataSource.query(`SELECT count(*)::int AS m FROM ledger_entries WHERE account_id = $1 AND kind = 'hold'`, [accountId]);
    expect([n, m]).toEqual([0, 0]);
  });

  it('accepts exactly as many concurrent holds as the balance covers', async () => {
    await accounts.topup(accountId, 1000n);
    const results = await Promise.allSettled(Array.from({ length: 40 }, () => tasks.createWithHold(newTask(100n))));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(10);
    expect(await balance()).toEqual({ available: 0n, held: 1000n, spent: 0n });
  });

  it('pages through every open task exactly once with keyset pagination', async () => {
    await accounts.topup(accountId, 1000n);
    const ids = new Set<string>();
    for (let i = 0; i < 20; i++) ids.add((await tasks.createWithHold(newTask(1n))).id);
    const seen: string[] = [];
    let afterId: string | undefined;
    for (let page = 0; page < 20; page++) {
      const rows = await new TaskRecoveryRepository(db.dataSource).openIds('image', 0, 7, afterId);
      seen.push(...rows.filter((id) => ids.has(id)));
      if (rows.length < 7) break;
      afterId = rows[rows.length - 1]!;
    }
    expect(seen.sort()).toEqual([...ids].sort());
  });

  it('refuses a second task under the same Idempotency-Key and API key without holding anything', async () => {
    await accounts.topup(accountId, 1000n);
    const first = await tasks.createWithHold({ ...newTask(100n), idempotencyKey: 'order-7' });
    await expect(tasks.createWithHold({ ...newTask(100n), idempotencyKey: 'order-7' })).rejects.toMatchObject({
      name: 'DuplicateSubmissionError',
      existing: expect.objectContaining({ id: first.id }),
    });
    expect(await balance()).toEqual({ available: 900n, held: 100n, spent: 0n });
    // another key of the same account may use the same Idempotency-Key
    const otherKey = (await new ApiKeyRepository(db.dataSource).create({ accountId })).key.id;
    await tasks.createWithHold({ ...newTask(100n), apiKeyId: otherKey, idempotencyKey: 'order-7' });
    expect((await balance()).held).toBe(200n);
  });

  it("writes an avatar batch's new group and asset rows with the hold, and none of them when the hold is refused", async () => {
    await accounts.topup(accountId, 150n);
    const batch = (groupId: string, newGroup?: { name: string; description: string; autoCreated: boolean }) => ({
      groupId,
      newGroup,
      assets: [0, 1].map((i) => ({
        id: newAssetId(),
        position: i,
        assetType: 'Image' as const,
        name: `a${i}`,
        url: `https://cdn.example.com/${i}.png`,
        projectName: 'p',
      })),
    });
    const groupId = newAssetGroupId();
    const t = await tasks.createWithHold({ ...newTask(100n), avatarBatch: batch(groupId, { name: 'g', description: '', autoCreated: true }) });
    // an existing group takes no new row; the second hold is above the balance
    await expect(tasks.createWithHold({ ...newTask(100n), avatarBatch: batch(groupId) })).rejects.toMatchObject({ type: 'payment_required' });
    const rows = await db.dataSource.query(
      `SELECT a.task_id, a.position, g.id AS group_id FROM avatar_assets a JOIN asset_groups g ON g.id = a.group_id WHERE a.account_id = $1 ORDER BY a.position`,
      [accountId],
    );
    expect(rows).toEqual([
      { task_id: t.id, position: 0, group_id: groupId },
      { task_id: t.id, position: 1, group_id: groupId },
    ]);
    const [{ holds }] = await db.dataSource.query(`SELECT count(*)::int AS holds FROM ledger_entries WHERE account_id = $1 AND kind = 'hold'`, [accountId]);
    expect(holds).toBe(1);
    expect(await balance()).toEqual({ available: 50n, held: 100n, spent: 0n });
  });

  it('unbinds Idempotency-Keys after the retention, so the key can be used again', async () => {
    await accounts.topup(accountId, 1000n);
    const first = await tasks.createWithHold({ ...newTask(100n), idempotencyKey: 'order-8' });
    await db.dataSource.query(`UPDATE tasks SET created_at = now() - interval '25 hours' WHERE id = $1`, [first.id]);
    expect(await tasks.expireIdempotencyKeys()).toBeGreaterThanOrEqual(1);
    await expect(tasks.createWithHold({ ...newTask(100n), idempotencyKey: 'order-8' })).resolves.toMatchObject({ status: 'pending' });
  });

  it('unbinds a backlog of Idempotency-Keys in bounded batches, oldest first, until none is left', async () => {
    await accounts.topup(accountId, 1000n);
    const old: string[] = [];
    for (const [i, hours] of [27, 26, 25].entries()) {
      const t = await tasks.createWithHold({ ...newTask(10n), idempotencyKey: `backlog-${i}` });
      await db.dataSource.query(`UPDATE tasks SET created_at = now() - ($2 || ' hours')::interval WHERE id = $1`, [t.id, String(hours)]);
      old.push(t.id);
    }
    const bound = async (): Promise<string[]> =>
      (
        (await db.dataSource.query(`SELECT id FROM tasks WHERE id = ANY($1) AND idempotency_key IS NOT NULL ORDER BY created_at`, [old])) as Array<{
          id: string;
        }>
      ).map((r) => r.id);
    // any other expired key of this database goes first or with them: drain to the last two of ours, then one, then none
    for (let i = 0; i < 20 && (await bound()).length > 2; i++) expect(await tasks.expireIdempotencyKeys(24, 1)).toBe(1);
    expect(await bound()).toEqual(old.slice(1));
    expect(await tasks.expireIdempotencyKeys(24, 1)).toBe(1);
    expect(await bound()).toEqual(old.slice(2));
    expect(await tasks.expireIdempotencyKeys(24, 5)).toBe(1);
    expect(await bound()).toEqual([]);
  });
  // Today's plan takes the account rows in one order even without `locked`; this guards the whole.
  it('two billing replicas settling batches over shared accounts at once neither deadlock nor settle twice', async () => {
    const ids: Array<{ accountId: string; keyId: string }> = [];
    for (let i = 0; i < 6; i++) {
      const acc = (await accounts.create({ name: `settle-${i}` })).id;
      await accounts.topup(acc, 1_000_000n);
      ids.push({ accountId: acc, keyId: (await new ApiKeyRepository(db.dataSource).create({ accountId: acc })).key.id });
    }
    const made: string[] = [];
    for (let i = 0; i < 120; i++) {
      const { accountId: a, keyId: k } = ids[i % ids.length]!;
      const t = await tasks.createWithHold({ ...newTask(10n), accountId: a, apiKeyId: k });
      if (i % 2 === 0) await tasks.complete(t.id, { images: [{ url: 'http://127.0.0.1/x.png' }] });
      else await tasks.fail(t.id, { code: 'task_failed', message: 'x' });
      made.push(t.id);
    }
    // batches of 20 from both ends, each task in two batches that run at the same time on two connections
    for (let round = 0; round < 6; round++) {
      const forward = made.slice(round * 20, round * 20 + 20);
      const backward = [...made].reverse().slice(round * 20, round * 20 + 20);
      await Promise.all([settleMany(db.dataSource, [...forward, ...backward.slice(0, 10)]), settleMany(db.dataSource, [...backward, ...forward.slice(10)])]);
    }
    const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM ledger_entries WHERE task_id = ANY($1) AND kind IN ('capture','release')`, [
      made,
    ]);
    expect(n).toBe(120);
    // task i is account i % 6's and completed when i is even: accounts 0, 2, 4 spent 20 × 10, the others nothing
    for (const [j, { accountId: a }] of ids.entries()) {
      const acc = (await accounts.get(a))!;
      const spent = j % 2 === 0 ? 200n : 0n;
      expect([acc.held, acc.spent, acc.available]).toEqual([0n, spent, 1_000_000n - spent]);
    }
  });
});
