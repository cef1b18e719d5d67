import fc from 'fast-check';
import type { DataSource, EntityManager } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '@gmg/testing';
import { DomainError } from '@gmg/errors';
import {
  BATCH_OVER_BALANCE,
  InvariantViolation,
  batchedHoldOps,
  batchedOps,
  ledgerProperty,
  partialCaptureProperty,
  realOps,
  settlementStormProperty,
  type LedgerOps,
} from './ledger-model.test-kit';
import { SETTLE_SQL } from './ledger.repository';
import { HOLD_MANY_SQL, type NewTask } from './task.repository';
import { rowsOf, type Row } from './sql';

/**
 * Mutation tests: the ledger properties must FAIL when a safeguard is removed, in a scratch database.
 * If one of these starts passing, the property tests have stopped proving anything. The hand-written settlements
 * differ from SETTLE_SQL only in the safeguard named; like it, they mark the task settled (`settled_at`).
 */

/** createWithHold with the conditional hold replaced by an unconditional one (no `AND available >= $2`). */
async function unconditionalHold(ds: DataSource, t: NewTask): Promise<void> {
  await ds.transaction(async (m: EntityManager) => {
    const held = rowsOf(
      await m.query(`UPDATE accounts SET available = available - $2, held = held + $2 WHERE id = $1 RETURNING id`, [t.accountId, t.price.toString()]),
    );
    if (held.length === 0) throw new DomainError('payment_required', 'no account');
    await m.query(
      `INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, status, progress, request, price,
                          price_snapshot, deadline_at) VALUES ($1,$2,$3,$4,$5,$6,'pending',0,$7,$8,$9,$10)`,
      [
        t.id,
        t.accountId,
        t.apiKeyId,
        t.model,
        t.requestedModel,
        t.pool,
        JSON.stringify(t.request),
        t.price.toString(),
        JSON.stringify(t.priceSnapshot),
        t.deadlineAt,
      ],
    );
    await m.query(`INSERT INTO ledger_entries (account_id, task_id, kind, amount) VALUES ($1,$2,'hold',$3)`, [t.accountId, t.id, t.price.toString()]);
  });
}

/** settleTask as it would look without the unique constraint to lean on: a plain insert, then move the money. */
async function settleWithoutConflictGuard(ds: DataSource, taskId: string): Promise<void> {
  await ds.transaction(async (m: EntityManager) => {
    const [t]: Row[] = await m.query(`SELECT account_id, status, price FROM tasks WHERE id = $1`, [taskId]);
    if (!t || (t.status !== 'completed' && t.status !== 'failed')) return;
    const done: Row[] = await m.query(`SELECT 1 FROM ledger_entries WHERE task_id = $1 AND kind IN ('capture','release')`, [taskId]);
    if (done.length > 0) return; // check-then-insert: racy without the constraint
    const kind = t.status === 'completed' ? 'capture' : 'release';
    await m.query(`INSERT INTO ledger_entries (account_id, task_id, kind, amount) VALUES ($1,$2,$3,$4)`, [t.account_id, taskId, kind, t.price]);
    await m.query(`UPDATE tasks SET settled_at = now() WHERE id = $1 AND settled_at IS NULL`, [taskId]);
    await m.query(
      kind === 'capture'
        ? `UPDATE accounts SET held = held - $2, spent = spent + $2 WHERE id = $1`
        : `UPDATE accounts SET held = held - $2, available = available + $2 WHERE id = $1`,
      [t.account_id, t.price],
    );
  });
}

/** settleTask before partial captures: ignores the stored capture amount and captures the whole hold. */
async function settleIgnoringCaptureAmount(ds: DataSource, taskId: string): Promise<void> {
  await ds.transaction(async (m: EntityManager) => {
    const [t]: Row[] = await m.query(`SELECT account_id, status, price FROM tasks WHERE id = $1`, [taskId]);
    if (!t || (t.status !== 'completed' && t.status !== 'failed')) return;
    const kind = t.status === 'completed' ? 'capture' : 'release';
    const inserted = rowsOf(
      await m.query(`INSERT INTO ledger_entries (account_id, task_id, kind, amount) VALUES ($1,$2,$3,$4) ON CONFLICT (task_id, kind) DO NOTHING RETURNING id`, [
        t.account_id,
        taskId,
        kind,
        t.price,
      ]),
    );
    if (inserted.length === 0) return;
    await m.query(`UPDATE tasks SET settled_at = now() WHERE id = $1 AND settled_at IS NULL`, [taskId]);
    await m.query(
      kind === 'capture'
        ? `UPDATE accounts SET held = held - $2, spent = spent + $2 WHERE id = $1`
        : `UPDATE accounts SET held = held - $2, available = available + $2 WHERE id = $1`,
      [t.account_id, t.price],
    );
  });
}

/**
 * A partial settlement whose remainder release is not gated by the capture: each entry is inserted on its own
 * ON CONFLICT and moves its own money, in separate transactions, so concurrent deliveries interleave.
 */
async function settleUngatedRemainder(ds: DataSource, taskId: string): Promise<void> {
  const [t]: Row[] = await ds.query(`SELECT account_id, status, price, capture_amount FROM tasks WHERE id = $1`, [taskId]);
  if (!t || (t.status !== 'completed' && t.status !== 'failed')) return;
  const price = BigInt(t.price as string);
  const captured = t.status === 'failed' ? 0n : t.capture_amount === null ? price : BigInt(t.capture_amount as string);
  const entries: Array<[string, bigint]> = [
    ['capture', captured],
    ['release', price - captured],
  ];
  for (const [kind, amount] of entries) {
    if (kind === 'capture' && t.status === 'failed') continue;
    if (kind === 'release' && amount === 0n && t.status !== 'failed') continue;
    // check-then-insert without the constraint's help in between: the money moves before the row lands
    const seen: Row[] = await ds.query(`SELECT 1 FROM ledger_entries WHERE task_id = $1 AND kind = $2`, [taskId, kind]);
    if (seen.length > 0) continue;
    await ds.query(
      kind === 'capture'
        ? `UPDATE accounts SET held = held - $2, spent = spent + $2 WHERE id = $1`
        : `UPDATE accounts SET held = held - $2, available = available + $2 WHERE id = $1`,
      [t.account_id, amount.toString()],
    );
    await ds.query(`INSERT INTO ledger_entries (account_id, task_id, kind, amount) VALUES ($1,$2,$3,$4) ON CONFLICT (task_id, kind) DO NOTHING`, [
      t.account_id,
      taskId,
      kind,
      amount.toString(),
    ]);
  }
  await ds.query(`UPDATE tasks SET settled_at = now() WHERE id = $1 AND settled_at IS NULL`, [taskId]);
}

/**
 * The batched settlement with the per-account sum removed: the balance move joins every settled task row directly
 * (UPDATE … FROM with two rows for one account applies only one of them), so a batch with two tasks of one account
 * moves the money of one.
 */
const UNSUMMED_SETTLE_SQL = ((): string => {
  const summed = /moves AS \([\s\S]*?GROUP BY d\.account_id\n\)/;
  if (!summed.test(SETTLE_SQL)) throw new Error('the mutant no longer matches SETTLE_SQL: update it');
  return SETTLE_SQL.replace(
    summed,
    `moves AS (
  SELECT d.account_id, d.price, d.captured FROM due d JOIN first f ON f.task_id = d.id
)`,
  );
})();
const settleManyUnsummed = (ds: DataSource, ids: string[]): Promise<unknown> => ds.query(UNSUMMED_SETTLE_SQL, [ids]);

/**
 * The batched hold checking the balance against the batch's largest price instead of its total: each task alone
 * would fit, together they overdraw.
 */
const MAX_NOT_SUM_HOLD_SQL = ((): string => {
  // the gate is in `funded` (on the locked row) and in `hold` (on the row it moves): the mutant weakens both
  const gates = ['locked.available >= total.amount', 'accounts.available >= total.amount'];
  if (!gates.every((g) => HOLD_MANY_SQL.includes(g))) throw new Error('the mutant no longer matches HOLD_MANY_SQL: update it');
  return gates.reduce((sql, g) => sql.replace(g, `${g.split(' ')[0]} >= (SELECT max(price) FROM b)`), HOLD_MANY_SQL);
})();

/** Runs `property` (default: the random-sequence ledger property) against `ops` and returns why it failed. */
const failureOf = async <T extends unknown[]>(
  ds: DataSource,
  ops: LedgerOps,
  numRuns: number,
  property: (ds: DataSource, ops: LedgerOps) => fc.IAsyncProperty<T>,
): Promise<string> => {
  const out = await fc.check(property(ds, ops), { numRuns });
  expect(out.failed).toBe(true);
  const err = out.errorInstance;
  return err instanceof Error ? err.message : String(err);
};

describe('ledger properties fail when a safeguard is removed (scratch databases)', () => {
  let noUnique: TestDatabase;
  let noCheck: TestDatabase;

  beforeAll(async () => {
    noUnique = await createTestDatabase('gmg_mut_unique');
    await noUnique.dataSource.query(`ALTER TABLE ledger_entries DROP CONSTRAINT ledger_task_kind_unique`);
    noCheck = await createTestDatabase('gmg_mut_hold');
  });
  afterAll(async () => {
    await noUnique?.drop();
    await noCheck?.drop();
  });

  it('without UNIQUE(task_id, kind) the real settleTask cannot settle at all (ON CONFLICT has no arbiter)', async () => {
    const msg = await failureOf(noUnique.dataSource, realOps, 300, ledgerProperty);
    expect(msg).toMatch(/no unique or exclusion constraint matching the ON CONFLICT/);
  }, 120_000);

  it('without UNIQUE(task_id, kind) a check-then-insert settlement double-settles duplicated concurrent deliveries', async () => {
    const msg = await failureOf(noUnique.dataSource, { ...realOps, settle: settleWithoutConflictGuard }, 1000, ledgerProperty);
    expect(msg).toMatch(/exactly one settlement|settled once|stranded|non-negative|captures = completed prices|check constraint/);
  }, 120_000);

  it('a settlement that ignores the stored capture amount over-charges partially approved tasks', async () => {
    const msg = await failureOf(noCheck.dataSource, { ...realOps, settle: settleIgnoringCaptureAmount }, 200, partialCaptureProperty);
    expect(msg).toMatch(/^(capture|exactly one settlement|settlement sums to the hold|captures = completed prices|model):/);
  }, 120_000);

  it('a partial settlement without the exactly-once gate double-moves money under duplicated deliveries', async () => {
    const msg = await failureOf(noCheck.dataSource, { ...realOps, settle: settleUngatedRemainder }, 300, partialCaptureProperty);
    expect(msg).toMatch(/non-negative|check constraint|balance|stranded|model|captures = completed prices/);
  }, 120_000);

  it('a batched settlement that moves each account once per batch, not once per task, loses money', async () => {
    const msg = await failureOf(noCheck.dataSource, batchedOps(settleManyUnsummed), 100, settlementStormProperty);
    expect(msg).toMatch(/balance|model|held|stranded|captures = completed prices|non-negative|check constraint/);
  }, 120_000);

  it('with an unconditional hold the balance CHECK turns an overdraft into an error, not a 402', async () => {
    const msg = await failureOf(noCheck.dataSource, { ...realOps, createWithHold: unconditionalHold }, 300, ledgerProperty);
    expect(msg).toMatch(/^hold: .*accounts_available_check/);
  }, 120_000);

  it('with an unconditional hold and no balance CHECK the account overdraws', async () => {
    await noCheck.dataSource.query(`ALTER TABLE accounts DROP CONSTRAINT accounts_available_check`);
    const out = await fc.check(ledgerProperty(noCheck.dataSource, { ...realOps, createWithHold: unconditionalHold }), { numRuns: 300 });
    expect(out.failed).toBe(true);
    expect(out.errorInstance).toBeInstanceOf(InvariantViolation);
    expect((out.errorInstance as InvariantViolation).invariant).toBe('no overdraft');
  }, 120_000);

  it('a batched hold that checks the balance against one price, not the batch total, overdraws (no balance CHECK)', async () => {
    // runs after the test above dropped accounts_available_check: with it, the overdraft would be a CHECK error
    // and the batcher's one-by-one retry would hide the broken gate. Random sequences alone reach the case only when
    // the timing groups two holds into one statement (a CI run once missed it in 300 runs): BATCH_OVER_BALANCE runs first
    const out = await fc.check(ledgerProperty(noCheck.dataSource, batchedHoldOps(MAX_NOT_SUM_HOLD_SQL)), {
      numRuns: 300,
      examples: [BATCH_OVER_BALANCE],
    });
    expect(out.failed).toBe(true);
    expect(out.errorInstance).toBeInstanceOf(InvariantViolation);
    expect((out.errorInstance as InvariantViolation).invariant).toBe('no overdraft');
  }, 120_000);
});
