/**
 * Billing after a Redis loss: the sweep scheduler comes back within two of its keeper's checks (one an interval) and the settle jobs that went
 * with the data are replaced at once (not after UNSETTLED_AFTER_MS). The loss deletes this test's prefix only.
 */
import { TaskRepository } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createRedis, type Redis } from '@gmg/queue';
import { createTestDatabase, deleteRedisPrefix, fundedOwner, testTask, uniqueRedisPrefix, waitFor, TEST_REDIS_URL, type TestDatabase } from '@gmg/testing';
import { startBillingWorker, type BillingWorker } from './billing-worker';

const logger = createLogger({ service: 'test', level: 'silent' });
const INTERVAL_MS = 1000;

let db: TestDatabase;
let redis: Redis;
let prefix: string;
let billing: BillingWorker | undefined;

beforeAll(async () => {
  db = await createTestDatabase();
  redis = createRedis(TEST_REDIS_URL, 'worker');
  prefix = uniqueRedisPrefix();
});

afterAll(async () => {
  await billing?.close(true);
  await deleteRedisPrefix(redis, prefix);
  await redis.quit();
  await db.drop();
});

it('after its keys are gone: the billing sweep schedule is back within two intervals and unsettled tasks settle now', async () => {
  // a long unsettled age: the plain sweep would leave these tasks for a minute; only the rebuild settles them now
  billing = await startBillingWorker({ ds: db.dataSource, redis, prefix, logger }, { concurrency: 5, sweepIntervalMs: INTERVAL_MS, unsettledAfterMs: 60_000 });
  expect(await billing!.queues[0]!.getJobScheduler('sweep')).toBeTruthy();

  const owner = await fundedOwner(db.dataSource, 'keeper-test', 1_000_000n);
  const tasks = new TaskRepository(db.dataSource);
  const ids: string[] = [];
  for (const outcome of ['completed', 'failed'] as const) {
    const t = await tasks.createWithHold(testTask(owner, 2500n));
    // ended, and its settle job was in the Redis that is about to be lost
    if (outcome === 'completed') await tasks.complete(t.id, {});
    else await tasks.fail(t.id, { code: 'task_failed', message: 'x' });
    ids.push(t.id);
  }

  // counted in the keeper's own checks (one an interval), not in wall-clock time: a slow machine stretches both
  const keeper = billing.keeper!;
  const ticksBefore = keeper.ticks;
  expect(await deleteRedisPrefix(redis, prefix)).toBeGreaterThan(0);
  const ticksAtBack = await waitFor(async () => ((await billing!.queues[0]!.getJobScheduler('sweep')) ? keeper.ticks : undefined), {
    timeoutMs: 10 * INTERVAL_MS,
    intervalMs: 50,
    what: 'the billing sweep scheduler to come back',
  });
  // a check under way when the keys went may finish without seeing the loss; the next one puts the schedule back (a
  // sweep job finishing meanwhile may put it back before any check: BullMQ schedules its next run)
  expect(ticksAtBack - ticksBefore).toBeLessThanOrEqual(2);

  const kinds = await waitFor(
    async () => {
      const rows: Array<{ task_id: string; kind: string }> = await db.dataSource.query(
        `SELECT task_id, kind FROM ledger_entries WHERE task_id = ANY($1) AND kind <> 'hold'`,
        [ids],
      );
      return rows.length === 2 ? rows : undefined;
    },
    { timeoutMs: 10 * INTERVAL_MS, what: 'both tasks settled' },
  );
  expect(Object.fromEntries(kinds.map((r) => [r.task_id, r.kind]))).toEqual({ [ids[0]!]: 'capture', [ids[1]!]: 'release' });
  const [{ held }] = await db.dataSource.query(`SELECT held FROM accounts WHERE id = $1`, [owner.accountId]);
  expect(held).toBe('0');
});
