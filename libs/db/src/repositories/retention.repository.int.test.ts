import { createTestDatabase, seedVolume, testTask, type TestDatabase } from '@gmg/testing';
import { createDataSource } from '../data-source';
import { AccountRepository } from './account.repository';
import { ApiKeyRepository } from './api-key.repository';
import { settleTask } from './ledger.repository';
import { RetentionRepository } from './retention.repository';
import { TaskRepository } from './task.repository';

describe('retention (RetentionRepository, real Postgres)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('archives only ended, settled tasks past the retention, oldest first in bounded batches; money and counters untouched', async () => {
    const ds = db.dataSource;
    const accounts = new AccountRepository(ds);
    const accountId = (await accounts.create({ name: 'retention' })).id;
    const apiKeyId = (await new ApiKeyRepository(ds).create({ accountId })).key.id;
    await accounts.topup(accountId, 10_000n);
    const tasks = new TaskRepository(ds);
    const make = async (price: bigint) => (await tasks.createWithHold(testTask({ accountId, apiKeyId }, price))).id;
    const ended = async (id: string, daysAgo: number, settle = true) => {
      await tasks.complete(id, { images: [{ url: 'http://x/1.jpg' }] });
      if (settle) expect(await settleTask(ds, id)).toBe('captured');
      await ds.query(`UPDATE tasks SET completed_at = now() - ($2 || ' days')::interval WHERE id = $1`, [id, String(daysAgo)]);
    };
    const [old1, old2, unsettled, recent, open] = [await make(10n), await make(20n), await make(30n), await make(40n), await make(50n)];
    await ended(old1, 41);
    await ended(old2, 40);
    await ended(unsettled, 40, false);
    await ended(recent, 5);
    const money = async () => ({
      account: (await ds.query(`SELECT available::text, held::text FROM accounts WHERE id = $1`, [accountId]))[0],
      // an account's ledger is its entries in both tables
      ledger: (
        await ds.query(
          `SELECT count(*)::int AS n, sum(amount)::text AS s FROM (
        SELECT amount FROM ledger_entries WHERE account_id = $1 UNION ALL SELECT amount FROM ledger_archive WHERE account_id = $1) l`,
          [accountId],
        )
      )[0],
      totals: await ds.query(`SELECT kind, sum(total)::text AS total FROM ledger_totals GROUP BY kind ORDER BY kind`),
      inflight: (await ds.query(`SELECT COALESCE(sum(open), 0)::int AS n FROM task_inflight WHERE api_key_id = $1`, [apiKeyId]))[0].n,
    });
    const before = await money();

    const retention = new RetentionRepository(ds);
    expect(await retention.archiveTasks(30, 1)).toBe(1); // a batch is bounded: the oldest first
    expect((await ds.query(`SELECT id FROM tasks_archive`)).map((r: { id: string }) => r.id)).toEqual([old1]);
    expect(await retention.archiveTasks(30)).toBe(1);
    expect(await retention.archiveTasks(30)).toBe(0);

    const left = (await ds.query(`SELECT id FROM tasks WHERE account_id = $1`, [accountId])).map((r: { id: string }) => r.id).sort();
    expect(left).toEqual([unsettled, recent, open].sort());
    const archived: Array<{ id: string; task: { id: string; price: string; status: string; account_id: string } }> = await ds.query(
      `SELECT id, task FROM tasks_archive ORDER BY completed_at`,
    );
    expect(archived.map((a) => [a.id, a.task.id, String(a.task.price), a.task.status, a.task.account_id])).toEqual([
      [old1, old1, '10', 'completed', accountId],
      [old2, old2, '20', 'completed', accountId],
    ]);
    expect(await money()).toEqual(before); // the balance, the ledger's sums and the in-flight counter are untouched
    expect(await tasks.get(old1)).toBeNull(); // a poll of it now answers 404
    // an archived task's entries left with it (hold and capture), the same rows under the same ids; the others stayed
    const where = async (table: string) =>
      (await ds.query(`SELECT task_id, kind FROM ${table} WHERE account_id = $1 AND task_id IS NOT NULL ORDER BY id`, [accountId])).map(
        (r: { task_id: string; kind: string }) => `${r.task_id}:${r.kind}`,
      );
    expect(await where('ledger_archive')).toEqual([`${old1}:hold`, `${old2}:hold`, `${old1}:capture`, `${old2}:capture`]);
    expect((await where('ledger_entries')).some((e: string) => e.startsWith(old1) || e.startsWith(old2))).toBe(false);

    // the sweep's share: batches until a short one; 0 days keeps everything
    await ended(unsettled, 40, false);
    expect(await settleTask(ds, unsettled)).toBe('captured');
    expect(await retention.sweep({ taskDays: 0, webhookDeliveryDays: 0, ledgerDays: 0 }, 1)).toEqual({
      archivedTasks: 0,
      archivedLedgerEntries: 0,
      prunedDeliveries: 0,
    });
    expect(await retention.sweep({ taskDays: 30, webhookDeliveryDays: 0, ledgerDays: 0 }, 1)).toEqual({
      archivedTasks: 1,
      archivedLedgerEntries: 0,
      prunedDeliveries: 0,
    });
  });

  it('one sweep drains a backlog larger than any fixed number of batches while they come back full', async () => {
    const own = await createTestDatabase(); // its own: the sweep counts every old task of the database
    try {
      const accounts = new AccountRepository(own.dataSource);
      const accountId = (await accounts.create({ name: 'retention backlog' })).id;
      await accounts.topup(accountId, 1_000_000n);
      const apiKeyId = (await new ApiKeyRepository(own.dataSource).create({ accountId })).key.id;
      const tasks = new TaskRepository(own.dataSource);
      const ids: string[] = [];
      for (let i = 0; i < 25; i++) {
        const id = (await tasks.createWithHold(testTask({ accountId, apiKeyId }, 10n))).id;
        await tasks.complete(id, { images: [{ url: 'http://x/1.jpg' }] });
        expect(await settleTask(own.dataSource, id)).toBe('captured');
        ids.push(id);
      }
      await own.dataSource.query(`UPDATE tasks SET completed_at = now() - interval '40 days' WHERE id = ANY($1)`, [ids]);
      const retention = new RetentionRepository(own.dataSource);
      const policy = { taskDays: 30, webhookDeliveryDays: 0, ledgerDays: 0 };
      // its clock bounds it: with no time budget it stops after its first (full) batch
      expect((await retention.sweep(policy, 2, 0)).archivedTasks).toBe(2);
      // batches of 2: 12 statements for the other 23, more than the old fixed 10 per sweep; then nothing is left
      expect((await retention.sweep(policy, 2)).archivedTasks).toBe(23);
      expect((await retention.sweep(policy, 2)).archivedTasks).toBe(0);
      expect(await own.dataSource.query(`SELECT count(*)::int AS n FROM tasks_archive`)).toEqual([{ n: 25 }]);
    } finally {
      await own.drop();
    }
  });

  it('runs from several replicas at once: each task and entry moves exactly once, the work shared between them', async () => {
    const own = await createTestDatabase();
    const second = createDataSource({ url: own.url, poolSize: 4, applicationName: 'gmg-test-retention-2' });
    try {
      await second.initialize();
      // 3,000 old settled tasks (6,000 entries), 1,000 top-ups past the ledger retention
      await seedVolume(own.dataSource, { tasks: 6000, ledger: 13_000, accounts: 10, days: 60 });
      const [before] = (await own.dataSource.query(`
        SELECT (SELECT count(*) FROM tasks WHERE settled_at IS NOT NULL AND completed_at < now() - interval '30 days')::int AS old,
               (SELECT count(*) FROM ledger_entries)::int AS entries,
               (SELECT sum(amount)::text FROM ledger_entries) AS amount`)) as Array<{ old: number; entries: number; amount: string }>;
      expect(before!.old).toBeGreaterThan(2000);
      const policy = { taskDays: 30, webhookDeliveryDays: 0, ledgerDays: 30 };
      // three sweeps on two pools (two replicas and a second beat of one; the first with two lanes per table,
      // RETENTION_PARALLEL 2) with small batches, so they contend
      const runs = await Promise.all([
        new RetentionRepository(own.dataSource).sweep({ ...policy, parallel: 2 }, 50),
        new RetentionRepository(second).sweep(policy, 50),
        new RetentionRepository(second).sweep(policy, 50),
      ]);
      const moved = runs.reduce((s, r) => s + r.archivedTasks, 0);
      expect(moved).toBe(before!.old);
      expect(runs.filter((r) => r.archivedTasks > 0).length).toBeGreaterThanOrEqual(2); // more than one did the work
      const [after] = (await own.dataSource.query(`
        SELECT (SELECT count(*) FROM tasks_archive)::int AS archived, (SELECT count(DISTINCT id) FROM tasks_archive)::int AS distinct_archived,
               (SELECT count(*) FROM ledger_entries)::int + (SELECT count(*) FROM ledger_archive)::int AS entries,
               ((SELECT COALESCE(sum(amount), 0) FROM ledger_entries) + (SELECT COALESCE(sum(amount), 0) FROM ledger_archive))::text AS amount`)) as Array<
        Record<string, number | string>
      >;
      expect(after).toEqual({ archived: before!.old, distinct_archived: before!.old, entries: before!.entries, amount: before!.amount });
    } finally {
      if (second.isInitialized) await second.destroy();
      await own.drop();
    }
  });

  it("moves top-ups and closed leases' entries past the ledger retention to ledger_archive; nothing else ever leaves the ledger", async () => {
    const own = await createTestDatabase(); // its own: the batches below count every old entry of the database
    const ds = own.dataSource;
    const accounts = new AccountRepository(ds);
    const accountId = (await accounts.create({ name: 'ledger retention' })).id;
    await accounts.topup(accountId, 1_000n);
    await accounts.topup(accountId, 2_000n);
    const lease = async (id: string, status: 'active' | 'closed') => {
      await ds.query(
        `INSERT INTO credit_leases (id, account_id, edge_id, amount, used, status, expires_at, closed_at)
                      VALUES ($1, $2, 'edge', 100, 0, $3, now(), CASE WHEN $3 = 'closed' THEN now() END)`,
        [id, accountId, status],
      );
      await ds.query(`INSERT INTO ledger_entries (account_id, task_id, kind, amount) VALUES ($1, $2, 'hold', 100)`, [accountId, id]);
      if (status === 'closed')
        await ds.query(`INSERT INTO ledger_entries (account_id, task_id, kind, amount) VALUES ($1, $2, 'release', 100)`, [accountId, id]);
    };
    await lease('lease_closed', 'closed');
    await lease('lease_open', 'active');
    await accounts.topup(accountId, 3_000n); // the recent one stays
    const entries = async (table: string) =>
      (await ds.query(`SELECT COALESCE(task_id, 'topup ' || amount) AS e FROM ${table} WHERE account_id = $1 ORDER BY id`, [accountId])).map(
        (r: { e: string }) => r.e,
      );
    const sums = async () =>
      (
        await ds.query(
          `SELECT sum(amount)::text AS s, count(*)::int AS n FROM (
      SELECT amount FROM ledger_entries WHERE account_id = $1 UNION ALL SELECT amount FROM ledger_archive WHERE account_id = $1) l`,
          [accountId],
        )
      )[0];
    const totals = async () => ds.query(`SELECT kind, sum(total)::text AS total FROM ledger_totals GROUP BY kind ORDER BY kind`);
    const before = { sums: await sums(), totals: await totals() };
    const retention = new RetentionRepository(ds);

    // nothing is old enough yet: a retention of 1 day moves nothing
    expect(await retention.archiveLedger(1)).toBe(0);
    // with every entry "older" than 0 days (the cut-off is now): top-ups and the closed lease move, oldest first in
    // bounded batches; the open lease's hold stays
    expect(await retention.archiveLedger(0, 2)).toBe(2);
    expect(await entries('ledger_archive')).toEqual(['topup 1000', 'topup 2000']);
    expect(await retention.sweep({ taskDays: 0, webhookDeliveryDays: 0, ledgerDays: 0 }, 2)).toEqual({
      archivedTasks: 0,
      archivedLedgerEntries: 0,
      prunedDeliveries: 0,
    });
    expect(await retention.archiveLedger(0)).toBe(3);
    expect(await entries('ledger_entries')).toEqual(['lease_open']);
    expect(await entries('ledger_archive')).toEqual(['topup 1000', 'topup 2000', 'lease_closed', 'lease_closed', 'topup 3000']);
    expect({ sums: await sums(), totals: await totals() }).toEqual(before); // money history whole, all-time sums unchanged

    // the ledger stays append-only: an UPDATE, a DELETE of an entry not archived, or one whose archived copy differs
    const open = (await ds.query(`SELECT id FROM ledger_entries WHERE task_id = 'lease_open'`))[0].id as string;
    await expect(ds.query(`UPDATE ledger_entries SET amount = 1 WHERE id = $1`, [open])).rejects.toThrow(/append-only/);
    await expect(ds.query(`DELETE FROM ledger_entries WHERE id = $1`, [open])).rejects.toThrow(/append-only/);
    await ds.query(`INSERT INTO ledger_archive (id, account_id, task_id, kind, amount, created_at) VALUES ($1, $2, 'lease_open', 'hold', 99, now())`, [
      open,
      accountId,
    ]);
    await expect(ds.query(`DELETE FROM ledger_entries WHERE id = $1`, [open])).rejects.toThrow(/append-only/);
    expect(await entries('ledger_entries')).toEqual(['lease_open']);
    await own.drop();
  });

  it('prunes webhook delivery records past their retention, oldest first', async () => {
    const ds = db.dataSource;
    const accountId = (await new AccountRepository(ds).create({ name: 'hooks' })).id;
    const row = (daysAgo: number) =>
      ds.query(
        `INSERT INTO webhook_deliveries (account_id, task_id, event, delivery_id, attempt, url, succeeded, duration_ms, created_at)
       VALUES ($1, 'task_x', 'task.completed', md5(random()::text), 1, 'https://example.invalid/h', true, 5, now() - ($2 || ' days')::interval) RETURNING id`,
        [accountId, String(daysAgo)],
      );
    await row(20);
    await row(15);
    const keep = (await row(1))[0].id;
    const retention = new RetentionRepository(ds);
    expect(await retention.pruneWebhookDeliveries(14, 1)).toBe(1);
    expect(await retention.pruneWebhookDeliveries(14)).toBe(1);
    expect(await retention.pruneWebhookDeliveries(14)).toBe(0);
    expect((await ds.query(`SELECT id FROM webhook_deliveries WHERE account_id = $1`, [accountId])).map((r: { id: string }) => r.id)).toEqual([keep]);
  });
});
