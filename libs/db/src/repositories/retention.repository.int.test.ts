import { createTestDatabase, type TestDatabase } from '@gmg/testing';
import { AccountRepository } from './account.repository';
import { ApiKeyRepository } from './api-key.repository';
import { settleTask } from './ledger.repository';
import { RetentionRepository } from './retention.repository';
import { TaskRepository } from './task.repository';
import { testTask } from './new-task.testkit';

describe('retention (RetentionRepository, real Postgres)', () => {
  let db: TestDatabase;

  beforeAll(async () => { db = await createTestDatabase(); });
  afterAll(async () => { await db?.drop(); });

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
      ledger: (await ds.query(`SELECT count(*)::int AS n, sum(amount)::text AS s FROM ledger_entries WHERE account_id = $1`, [accountId]))[0],
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
    const archived: Array<{ id: string; task: { id: string; price: string; status: string; account_id: string } }> =
      await ds.query(`SELECT id, task FROM tasks_archive ORDER BY completed_at`);
    expect(archived.map((a) => [a.id, a.task.id, String(a.task.price), a.task.status, a.task.account_id]))
      .toEqual([[old1, old1, '10', 'completed', accountId], [old2, old2, '20', 'completed', accountId]]);
    expect(await money()).toEqual(before); // the ledger, the balance and the in-flight counter are untouched
    expect(await tasks.get(old1)).toBeNull(); // a poll of it now answers 404

    // the sweep's share: batches until a short one; 0 days keeps everything
    await ended(unsettled, 40, false);
    expect(await settleTask(ds, unsettled)).toBe('captured');
    expect(await retention.sweep({ taskDays: 0, webhookDeliveryDays: 0 }, 1)).toEqual({ archivedTasks: 0, prunedDeliveries: 0 });
    expect(await retention.sweep({ taskDays: 30, webhookDeliveryDays: 0 }, 1)).toEqual({ archivedTasks: 1, prunedDeliveries: 0 });
  });

  it('prunes webhook delivery records past their retention, oldest first', async () => {
    const ds = db.dataSource;
    const accountId = (await new AccountRepository(ds).create({ name: 'hooks' })).id;
    const row = (daysAgo: number) => ds.query(
      `INSERT INTO webhook_deliveries (account_id, task_id, event, delivery_id, attempt, url, succeeded, duration_ms, created_at)
       VALUES ($1, 'task_x', 'task.completed', md5(random()::text), 1, 'https://example.invalid/h', true, 5, now() - ($2 || ' days')::interval) RETURNING id`,
      [accountId, String(daysAgo)]);
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
