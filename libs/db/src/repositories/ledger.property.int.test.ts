import fc from 'fast-check';
import { createTestDatabase, propertyRuns, type TestDatabase } from '@gmg/testing';
import { OpsStatsRepository } from './ops-stats.repository';
import { BATCH_OVER_BALANCE, batchedHoldOps, batchedOps, ledgerProperty, partialCaptureProperty, settlementStormProperty } from './ledger-model.test-kit';

/**
 * Ledger invariants under random operation sequences with duplicated, reordered and concurrent settlement.
 * 1,000 generated runs in total (700 + 300), one database, a fresh account per run.
 * ledger.mutation.int.test.ts shows these same properties fail when the safeguards are removed.
 */
describe('ledger invariants (model-based, real Postgres)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('keeps every invariant after every step of random topups, holds, finishes and settlements (700 runs)', async () => {
    await fc.assert(ledgerProperty(db.dataSource), { numRuns: propertyRuns(700) });
  }, 300_000);

  it('captures exactly the stored capture amount and releases the rest, once, under duplicated deliveries (200 runs)', async () => {
    await fc.assert(partialCaptureProperty(db.dataSource), { numRuns: propertyRuns(200) });
  }, 300_000);

  it('keeps every invariant with settlements batched as billing runs them (settleMany, concurrent batches; 300 runs)', async () => {
    await fc.assert(ledgerProperty(db.dataSource, batchedOps()), { numRuns: propertyRuns(300) });
    await fc.assert(partialCaptureProperty(db.dataSource, batchedOps()), { numRuns: propertyRuns(100) });
  }, 300_000);

  it('keeps every invariant with concurrent holds of one account batched as the edge runs them (HoldBatchingTaskRepository; 300 runs)', async () => {
    await fc.assert(ledgerProperty(db.dataSource, batchedHoldOps()), { numRuns: propertyRuns(300), examples: [BATCH_OVER_BALANCE] });
  }, 300_000);

  it('settles a storm of duplicated, shuffled, concurrent deliveries exactly once per task (300 runs)', async () => {
    await fc.assert(settlementStormProperty(db.dataSource), { numRuns: propertyRuns(300) });
  }, 300_000);

  it('the same storm with the deliveries batched into shared, concurrent statements (settleMany; 300 runs)', async () => {
    await fc.assert(settlementStormProperty(db.dataSource, batchedOps()), { numRuns: propertyRuns(300) });
  }, 300_000);

  it('keeps the maintained ledger totals (what the money gauges read) equal to the ledger itself after all of the above', async () => {
    const direct = await db.dataSource.query(`SELECT kind, sum(amount)::text AS total, count(*)::text AS n FROM ledger_entries GROUP BY kind ORDER BY kind`);
    const kept = await db.dataSource.query(`SELECT kind, sum(total)::text AS total, sum(entries)::text AS n FROM ledger_totals GROUP BY kind ORDER BY kind`);
    expect(direct.length).toBeGreaterThanOrEqual(4);
    expect(kept).toEqual(direct);
    const { ledgerMinor } = await new OpsStatsRepository(db.dataSource).money();
    expect(Object.fromEntries(Object.entries(ledgerMinor).map(([k, v]) => [k, v.toString()]))).toEqual(
      Object.fromEntries((direct as Array<{ kind: string; total: string }>).map((r) => [r.kind, r.total])),
    );
  });
});
