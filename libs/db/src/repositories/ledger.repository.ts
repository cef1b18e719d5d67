import type { DataSource } from 'typeorm';
import type { Row } from './sql';

export type SettleOutcome = 'captured' | 'released' | 'duplicate' | 'not_terminal' | 'not_found';

export interface Settlement {
  outcome: SettleOutcome;
  /** The task has a callback_url (a webhook is due once it is settled); false when it is missing. */
  hasCallback: boolean;
}

/**
 * Settlement in ONE statement (data-modifying CTEs, autocommit: one round trip and one commit, like the hold), for
 * one task or a batch of them (`$1`, an array of task ids):
 * - `t`: the tasks; `due`: those that are terminal, with what each captures (nothing for failed, `capture_amount`
 *   or the whole price for completed);
 * - `first`: each task's first ledger row (capture, or release of a failed task), inserted with ON CONFLICT DO
 *   NOTHING on UNIQUE(task_id, kind). It gates everything else: the remainder releases and the money moves join
 *   it, so they happen only for the rows it inserted, in the same statement (a concurrent settlement of the same
 *   task waits on the unique index entry, then inserts nothing and moves nothing);
 * - `moves`: one balance move per account (the sum of its tasks in the batch: an UPDATE … FROM with two rows for
 *   one account would apply only one of them); `locked` takes those account rows in id order first, so two
 *   billing replicas settling batches that share accounts wait for each other instead of deadlocking (as the
 *   edge's batched hold does);
 * - `unspent`: a capped key's task gives back to its key's spend (api_key_spend, the period it was counted in) what
 *   it did not capture — all of a failed task's price, a partial capture's remainder — once, as it joins `first`;
 *   its rows are locked after the account rows (`refunds` reads `moved`) and in key order, as the hold locks them;
 * - `mark`: settled_at for the sweeper (also on a duplicate: harmless, already set).
 * A terminal status and its capture amount never change after the terminal transition, so a task is settled once
 * and its entries always sum to the hold.
 */
export const SETTLE_SQL = `
WITH t AS (
  SELECT id, account_id, status, price, capture_amount, model, callback_url IS NOT NULL AS has_callback, api_key_id, spend_period
  FROM tasks WHERE id = ANY($1::text[])
), due AS (
  SELECT id, account_id, status, price, model, api_key_id, spend_period,
         CASE WHEN status = 'failed' THEN 0 ELSE COALESCE(capture_amount, price) END AS captured
  FROM t WHERE status IN ('completed', 'failed')
), first AS (
  INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta)
  SELECT account_id, id,
         CASE WHEN status = 'completed' THEN 'capture' ELSE 'release' END,
         CASE WHEN status = 'completed' THEN captured ELSE price END,
         jsonb_build_object('model', model)
  FROM due ORDER BY id
  ON CONFLICT (task_id, kind) DO NOTHING
  RETURNING task_id, kind
), remainder AS (
  INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta)
  SELECT d.account_id, d.id, 'release', d.price - d.captured, jsonb_build_object('model', d.model)
  FROM due d JOIN first f ON f.task_id = d.id AND f.kind = 'capture'
  WHERE d.price > d.captured
  RETURNING 1
), moves AS (
  SELECT d.account_id, sum(d.price) AS price, sum(d.captured) AS captured
  FROM due d JOIN first f ON f.task_id = d.id
  GROUP BY d.account_id
), locked AS (
  SELECT id FROM accounts WHERE id IN (SELECT account_id FROM moves) ORDER BY id FOR UPDATE
), moved AS (
  UPDATE accounts a
  SET held = a.held - m.price, spent = a.spent + m.captured, available = a.available + (m.price - m.captured), updated_at = now()
  FROM moves m
  WHERE a.id = m.account_id AND a.id IN (SELECT id FROM locked)
  RETURNING 1
), refunds AS (
  SELECT d.api_key_id, d.spend_period, sum(d.price - d.captured) AS amount
  FROM due d JOIN first f ON f.task_id = d.id
  WHERE d.spend_period IS NOT NULL AND d.price > d.captured AND (SELECT count(*) FROM moved) >= 0
  GROUP BY d.api_key_id, d.spend_period
), spend_locked AS (
  SELECT api_key_id, period FROM api_key_spend
  WHERE (api_key_id, period) IN (SELECT api_key_id, spend_period FROM refunds) ORDER BY api_key_id, period FOR UPDATE
), unspent AS (
  UPDATE api_key_spend s SET spent = s.spent - r.amount
  FROM refunds r JOIN spend_locked l ON l.api_key_id = r.api_key_id AND l.period = r.spend_period
  WHERE s.api_key_id = r.api_key_id AND s.period = r.spend_period
  RETURNING 1
), mark AS (
  UPDATE tasks SET settled_at = now()
  WHERE id IN (SELECT id FROM due) AND settled_at IS NULL
  RETURNING 1
)
SELECT q.id, t.status, t.has_callback, f.kind AS settled_kind,
       (SELECT count(*) FROM remainder)::int AS remainders, (SELECT count(*) FROM moved)::int AS moved,
       (SELECT count(*) FROM mark)::int AS marked
FROM unnest($1::text[]) WITH ORDINALITY AS q(id, n)
LEFT JOIN t ON t.id = q.id
LEFT JOIN first f ON f.task_id = q.id
ORDER BY q.n`;

/** The largest batch one settlement statement takes. */
export const MAX_SETTLE_BATCH = 200;

/**
 * Settles a batch of terminal tasks exactly once, in one statement (SETTLE_SQL). Completed: capture
 * `capture_amount` (the whole price when NULL) and, when that is less than the hold, release the remainder; failed:
 * release everything. The same id twice in one batch is settled once; its later copies report `duplicate`.
 */
export async function settleMany(ds: DataSource, taskIds: readonly string[]): Promise<Map<string, Settlement>> {
  if (taskIds.length > MAX_SETTLE_BATCH) throw new Error(`settleMany: at most ${MAX_SETTLE_BATCH} tasks per statement`);
  const out = new Map<string, Settlement>();
  if (taskIds.length === 0) return out;
  const rows: Row[] = await ds.query(SETTLE_SQL, [taskIds]);
  for (const r of rows) {
    const id = r.id as string;
    const hasCallback = r.has_callback === true;
    let outcome: SettleOutcome;
    if (r.status === null) outcome = 'not_found';
    else if (r.status !== 'completed' && r.status !== 'failed') outcome = 'not_terminal';
    else if (r.settled_kind === null || out.has(id)) outcome = 'duplicate';
    else outcome = r.settled_kind === 'capture' ? 'captured' : 'released';
    if (!out.has(id)) out.set(id, { outcome, hasCallback });
  }
  return out;
}

/** One task: settleMany of one. */
export async function settle(ds: DataSource, taskId: string): Promise<Settlement> {
  return (await settleMany(ds, [taskId])).get(taskId) ?? { outcome: 'not_found', hasCallback: false };
}

/** settle(), the outcome only. */
export async function settleTask(ds: DataSource, taskId: string): Promise<SettleOutcome> {
  return (await settle(ds, taskId)).outcome;
}
