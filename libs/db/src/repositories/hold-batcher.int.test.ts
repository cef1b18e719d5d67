import { createTestDatabase, testTask, waitFor, type TestDatabase } from '@gmg/testing';
import { AccountRepository } from './account.repository';
import { ApiKeyRepository } from './api-key.repository';
import { newAssetGroupId } from './asset-group.repository';
import { newAssetId } from './asset.repository';
import { CreditLeaseRepository } from './credit-lease.repository';
import { HoldBatchingTaskRepository } from './hold-batcher';
import { TaskLeaseBook } from './task-lease.book';
import { DuplicateSubmissionError, HOLD_MANY_SQL, TaskRepository, holdTasks, type NewTask } from './task.repository';

describe('holds of one account batched into one statement (HoldBatchingTaskRepository, real Postgres)', () => {
  let db: TestDatabase;
  let accounts: AccountRepository;
  let keys: ApiKeyRepository;
  let batcher: HoldBatchingTaskRepository;
  let plain: TaskRepository;
  let accountId: string;
  let keyId: string;

  const newTask = (price: bigint, extra: Partial<NewTask> = {}): NewTask => testTask({ accountId, apiKeyId: keyId }, price, extra);
  const count = async (sql: string, params: unknown[]): Promise<number> => ((await db.dataSource.query(sql, params)) as Array<{ n: number }>)[0]!.n;
  /** Tasks of the account per transaction (one statement = one transaction = one created_at). */
  const statements = (): Promise<number> => count(`SELECT count(DISTINCT created_at)::int AS n FROM tasks WHERE account_id = $1`, [accountId]);

  beforeAll(async () => {
    db = await createTestDatabase();
    accounts = new AccountRepository(db.dataSource);
    keys = new ApiKeyRepository(db.dataSource);
    batcher = new HoldBatchingTaskRepository(db.dataSource);
    plain = new TaskRepository(db.dataSource);
  });
  afterAll(async () => {
    await db?.drop();
  });
  beforeEach(async () => {
    accountId = (await accounts.create({ name: 'batch' })).id;
    keyId = (await keys.create({ accountId })).key.id;
  });

  it('writes 150 concurrent holds of one account in a few statements, each task with its row, ledger entry and price', async () => {
    await accounts.topup(accountId, 10_000n);
    const submitted = Array.from({ length: 150 }, (_, i) => newTask(BigInt(1 + (i % 7)), { requestId: `req-${i}` }));
    const made = await Promise.all(submitted.map((t) => batcher.createWithHold(t)));

    // every caller got its own task back
    expect(made.map((t) => [t.id, t.price, t.requestId, t.status])).toEqual(submitted.map((t) => [t.id, t.price, t.requestId, 'pending']));
    const total = submitted.reduce((s, t) => s + t.price, 0n);
    const a = (await accounts.get(accountId))!;
    expect([a.available, a.held]).toEqual([10_000n - total, total]);
    const ledger: Array<{ task_id: string; amount: string; meta: { model: string } }> = await db.dataSource.query(
      `SELECT task_id, amount::text, meta FROM ledger_entries WHERE account_id = $1 AND kind = 'hold'`,
      [accountId],
    );
    expect(new Map(ledger.map((e) => [e.task_id, e.amount]))).toEqual(new Map(submitted.map((t) => [t.id, t.price.toString()])));
    expect(ledger.every((e) => e.meta.model === 'lumen-2-pro')).toBe(true);
    // the first went alone; the rest waited for it and went together (at most 100 per statement)
    const n = await statements();
    expect(n).toBeGreaterThanOrEqual(2);
    expect(n).toBeLessThan(20);
  });

  it('accepts exactly as many of 60 concurrent holds as the balance covers; the rest get payment_required', async () => {
    await accounts.topup(accountId, 1000n);
    const results = await Promise.allSettled(Array.from({ length: 60 }, () => batcher.createWithHold(newTask(100n))));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(10);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ type: 'payment_required' });
    const a = (await accounts.get(accountId))!;
    expect([a.available, a.held]).toEqual([0n, 1000n]);
    expect(await count(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [accountId])).toBe(10);
  });

  it("a batch is all or nothing per account: over the balance or over a key's in-flight room, nothing of that account is written", async () => {
    await accounts.topup(accountId, 250n);
    const rich = (await accounts.create({ name: 'rich' })).id;
    const richKey = (await keys.create({ accountId: rich })).key.id;
    await accounts.topup(rich, 1000n);
    const poor = [newTask(100n), newTask(100n), newTask(100n)];
    const fine = [newTask(100n, { accountId: rich, apiKeyId: richKey }), newTask(100n, { accountId: rich, apiKeyId: richKey })];
    const made = await batcher.createManyWithHold([poor[0]!, fine[0]!, poor[1]!, fine[1]!, poor[2]!]);
    expect([...made.keys()].sort()).toEqual(fine.map((t) => t.id).sort());
    expect(await count(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [accountId])).toBe(0);
    expect((await accounts.get(rich))!.held).toBe(200n);

    const limited = { inflightLimit: 4 };
    await plain.createWithHold(newTask(1n, limited));
    await plain.createWithHold(newTask(1n, limited));
    // 2 open + 3 in the batch > 4
    expect((await batcher.createManyWithHold([newTask(1n, limited), newTask(1n, limited), newTask(1n, limited)])).size).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [accountId])).toBe(2);
    // 2 open + 2 in the batch = 4; another key of the account has no limit and its own room
    const other = (await keys.create({ accountId })).key.id;
    const batch = [newTask(1n, limited), newTask(1n, { apiKeyId: other }), newTask(1n, limited)];
    const room = await batcher.createManyWithHold(batch);
    expect(batch.map((t) => room.get(t.id)?.apiKeyId)).toEqual([keyId, other, keyId]);
    const a = (await accounts.get(accountId))!;
    expect([a.available, a.held]).toEqual([245n, 5n]);
  });

  it("answers each submit of a mixed batch as if alone: a poor account's submits get payment_required, the others are held", async () => {
    await accounts.topup(accountId, 10n);
    const rich = (await accounts.create({ name: 'rich' })).id;
    const richKey = (await keys.create({ accountId: rich })).key.id;
    await accounts.topup(rich, 10_000n);
    const blocker = [0, 1].map(() => batcher.createWithHold(newTask(1n, { accountId: rich, apiKeyId: richKey }))); // the slot busy
    const mixed = Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? newTask(4n) : newTask(7n, { accountId: rich, apiKeyId: richKey })));
    const results = await Promise.allSettled([...blocker, ...mixed.map((t) => batcher.createWithHold(t))]);
    const poorResults = results.slice(2).filter((_, i) => i % 3 === 0);
    // 10 submits of 4 against 10 available: exactly two fit, one by one
    expect(poorResults.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
    for (const r of poorResults) if (r.status === 'rejected') expect(r.reason).toMatchObject({ type: 'payment_required' });
    expect(
      results
        .slice(2)
        .filter((_, i) => i % 3 !== 0)
        .every((r) => r.status === 'fulfilled'),
    ).toBe(true);
    expect((await accounts.get(accountId))!.held).toBe(8n);
    expect((await accounts.get(rich))!.held).toBe(2n + 20n * 7n);
  });

  // Two batches never wait for each other's rows (SKIP LOCKED), so they cannot deadlock; this guards the whole:
  // overlapping batches from two connections complete, and every hold is counted once, batched or retried.
  it('two edges batching overlapping accounts in changing orders at once neither deadlock nor lose a hold', async () => {
    const ids = [accountId];
    const keyOf = new Map([[accountId, keyId]]);
    for (let i = 0; i < 5; i++) {
      const id = (await accounts.create({ name: `shared-${i}` })).id;
      ids.push(id);
      keyOf.set(id, (await keys.create({ accountId: id })).key.id);
    }
    for (const id of ids) await accounts.topup(id, 1_000_000n);
    const batchOf = (order: string[]) => order.map((id) => newTask(1n, { accountId: id, apiKeyId: keyOf.get(id)! }));
    // overlapping subsets of changing sizes in changing orders (a hash of the accounts would order them differently)
    let seed = 7;
    const shuffled = (): string[] => {
      const out = [...ids];
      for (let i = out.length - 1; i > 0; i--) {
        seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
        const j = seed % (i + 1);
        [out[i], out[j]] = [out[j]!, out[i]!];
      }
      return out.slice(0, 2 + (seed % (ids.length - 1)));
    };
    const expected = new Map(ids.map((id) => [id, 0n]));
    let skipped = 0;
    for (let round = 0; round < 40; round++) {
      const [x, y] = [batchOf(shuffled()), batchOf(shuffled())];
      // straight to the batch statement, from two connections at once: an account whose row the other batch holds
      // is skipped (not waited for), and nothing of it written; held one by one afterwards, as the batcher does
      const held = (ts: NewTask[]) =>
        holdTasks(
          db.dataSource,
          ts.map((task) => ({ task })),
          HOLD_MANY_SQL,
        ).then((h) => h.tasks);
      const [a, b] = await Promise.all([held(x), held(y)]);
      for (const [batch, made] of [
        [x, a],
        [y, b],
      ] as const) {
        for (const t of batch) {
          if (!made.has(t.id)) {
            skipped++;
            await plain.createWithHold(t);
          }
          expected.set(t.accountId, expected.get(t.accountId)! + 1n);
        }
      }
    }
    for (const id of ids) expect((await accounts.get(id))!.held).toBe(expected.get(id));
    const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = ANY($1) AND kind = 'hold'`, [ids]);
    expect(n).toBe([...expected.values()].reduce((s, v) => s + Number(v), 0));
    expect(skipped).toBeLessThan(40 * 2 * ids.length); // the batches did write most of their tasks
  });

  it("an account whose row another transaction holds does not stall the other accounts' submits; its own wait, then go through", async () => {
    await accounts.topup(accountId, 1000n);
    const other = (await accounts.create({ name: 'free' })).id;
    const otherKey = (await keys.create({ accountId: other })).key.id;
    await accounts.topup(other, 1000n);
    const mine = (price: bigint) => newTask(price, { accountId: other, apiKeyId: otherKey });
    const holder = db.dataSource.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    try {
      await holder.query(`SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, [accountId]); // a long transaction on this account
      // the held account's submit first, alone on the idle edge; then one that joins the next batch (two: each
      // waits for the row on a connection of its own, and the test database's pool has five)
      const held = [batcher.createWithHold(newTask(10n))];
      const first = batcher.createWithHold(mine(1n));
      held.push(batcher.createWithHold(newTask(10n)));
      const free = Array.from({ length: 5 }, () => batcher.createWithHold(mine(10n))); // in one batch with `held`
      const bounded = <T>(p: Promise<T>): Promise<T> =>
        Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('stalled behind the held account')), 10_000).unref())]);
      await bounded(Promise.all([first, ...free]));
      // the held account's submits wait for its row, one by one, outside the batch
      await waitFor(
        async () => {
          // on the holder's connection (the pool's may all be waiting); a transaction keeps its first statistics
          // snapshot unless told to drop it; the one-task hold statement is the form that waits (a batch skips the row)
          await holder.query(`SELECT pg_stat_clear_snapshot()`);
          const [{ n }] = await holder.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH b AS%' AND query NOT LIKE '%SKIP LOCKED%'`,
          );
          return n >= 2;
        },
        { timeoutMs: 10_000, what: "the held account's holds waiting for its row" },
      );
      expect((await accounts.get(other))!.held).toBe(51n);
      await holder.commitTransaction();
      await bounded(Promise.all(held));
      expect((await accounts.get(accountId))!.held).toBe(20n);
    } finally {
      if (holder.isTransactionActive) await holder.rollbackTransaction();
      await holder.release();
    }
  });

  it('a batch with a reused Idempotency-Key falls back task by task: the rest are held, one of the pair is a duplicate', async () => {
    await accounts.topup(accountId, 1000n);
    const pair = [0, 1].map(() => newTask(10n, { idempotencyKey: 'same', idempotencyFingerprint: 'fp' }));
    const blocker = batcher.createWithHold(newTask(10n)); // in flight: the next four wait and go as one batch
    const racing = [pair[0]!, newTask(10n), pair[1]!, newTask(10n)];
    const results = await Promise.allSettled([blocker, ...racing.map((t) => batcher.createWithHold(t))]);
    // the one-by-one retries run at once: either of the pair may win
    expect([0, 2, 4].map((i) => results[i]!.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    const pairResults = [results[1]!, results[3]!];
    const won = pairResults.findIndex((r) => r.status === 'fulfilled');
    const lost = pairResults.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toBeGreaterThanOrEqual(0);
    expect(lost?.reason).toBeInstanceOf(DuplicateSubmissionError);
    const dup = lost!.reason as DuplicateSubmissionError;
    expect([dup.existing.id, dup.sameRequest]).toEqual([pair[won]!.id, true]);
    const a = (await accounts.get(accountId))!;
    expect([a.available, a.held]).toEqual([960n, 40n]);
  });

  it('holds an avatar batch alone on the account row, with its asset rows, even on an edge that leases every account', async () => {
    await accounts.topup(accountId, 1_000n);
    const leases = new TaskLeaseBook(new CreditLeaseRepository(db.dataSource), { targetMinor: 500n, ttlMs: 60_000, idleCloseMs: 60_000 });
    const leased = new HoldBatchingTaskRepository(db.dataSource, { leases, leaseWhen: 'always' });
    const groupId = newAssetGroupId();
    const asset = { id: newAssetId(), position: 0, assetType: 'Image' as const, name: 'a', url: 'https://cdn.example.com/a.png', projectName: 'p' };
    const [plainTask, avatarTask] = await Promise.all([
      leased.createWithHold(newTask(10n)),
      leased.createWithHold(newTask(40n, { avatarBatch: { groupId, newGroup: { name: 'g', description: '', autoCreated: true }, assets: [asset] } })),
    ]);
    const holds: Array<{ task_id: string; lease: string | null }> = await db.dataSource.query(
      `SELECT task_id, meta->>'lease' AS lease FROM ledger_entries WHERE account_id = $1 AND kind = 'hold' AND task_id IS NOT NULL`,
      [accountId],
    );
    expect(holds.find((h) => h.task_id === plainTask.id)?.lease).toMatch(/^lease_/);
    expect(holds.find((h) => h.task_id === avatarTask.id)).toEqual({ task_id: avatarTask.id, lease: null });
    expect(await count(`SELECT count(*)::int AS n FROM avatar_assets WHERE task_id = $1 AND group_id = $2`, [avatarTask.id, groupId])).toBe(1);
    await leases.close();
  });

  it('keeps accounts apart: concurrent holds of two accounts each move only their own balance', async () => {
    const firstAccount = accountId;
    const firstKey = keyId;
    await accounts.topup(firstAccount, 500n);
    const second = (await accounts.create({ name: 'batch-2' })).id;
    const secondKey = (await keys.create({ accountId: second })).key.id;
    await accounts.topup(second, 500n);
    const mine = Array.from({ length: 20 }, () => newTask(10n));
    const theirs = Array.from({ length: 30 }, () => newTask(10n, { accountId: second, apiKeyId: secondKey }));
    const interleaved = mine.flatMap((t, i) => [t, theirs[i]!]).concat(theirs.slice(mine.length));
    await Promise.all(interleaved.map((t) => batcher.createWithHold(t)));
    expect((await accounts.get(firstAccount))!.held).toBe(200n);
    expect((await accounts.get(second))!.held).toBe(300n);
    expect(await count(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1 AND api_key_id = $2`, [firstAccount, firstKey])).toBe(20);
  });
});
