import fc from 'fast-check';
import { createTestDatabase, type TestDatabase } from '@gmg/testing';
import { LedgerRun, ledgerProperty, opArb, partialCaptureProperty } from './ledger-model.testkit';

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
    await fc.assert(ledgerProperty(db.dataSource), { numRuns: 700 });
  }, 300_000);

  it('captures exactly the stored capture amount and releases the rest, once, under duplicated deliveries (200 runs)', async () => {
    await fc.assert(partialCaptureProperty(db.dataSource), { numRuns: 200 });
  }, 300_000);

  it('settles a storm of duplicated, shuffled, concurrent deliveries exactly once per task (300 runs)', async () => {
    const finishAll = fc.array(fc.boolean(), { minLength: 12, maxLength: 12 });
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 6 }), finishAll, fc.integer({ min: 2, max: 4 }), fc.nat(), async (seq, oks, copies, seed) => {
        const run = await LedgerRun.start(db.dataSource);
        await run.apply({ t: 'topup', amount: 1000 });
        await run.apply({ t: 'submitConcurrent', prices: [100, 200, 300, 400] });
        for (const op of seq) await run.apply(op);
        for (const ok of oks) await run.apply({ t: 'finish', pick: 0, ok });
        await run.apply({ t: 'settleAll', copies, seed });
        await run.check();
        await run.apply({ t: 'settleAll', copies, seed: seed + 1 });
        await run.check();
      }),
      { numRuns: 300 },
    );
  }, 300_000);
});
