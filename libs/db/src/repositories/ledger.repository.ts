import type { DataSource } from 'typeorm';
import type { Row } from './sql';

export type SettleOutcome = 'captured' | 'released' | 'duplicate' | 'not_terminal' | 'not_found';

export interface Settlement {
  outcome: SettleOutcome;
  /** The task has a callback_url (a webhook is due once it is settled); false when it is missing. */
  hasCallback: boolean;
}

/**
 * Settlement in ONE statement (data-modifying CTEs, autocommit: one round trip and one commit, like the hold):
 * - `t`: the task; `due`: it, when terminal, with what it captures (nothing for failed, `capture_amount` or the
 *   whole price for completed);
 * - `first`: the first ledger row (capture, or release of a failed task), inserted with ON CONFLICT DO NOTHING on
 *   UNIQUE(task_id, kind). It gates everything else: the remainder release and the money move join it, so they
 *   happen only when it was inserted, in the same statement (a concurrent settlement of the same task waits on the
 *   unique index entry, then inserts nothing and moves nothing);
 * - `mark`: settled_at for the sweeper (also on a duplicate: harmless, already set).
 * A terminal status and its capture amount never change after the terminal transition, so a task is settled once
 * and its entries always sum to the hold.
 */
const SETTLE_SQL = `
WITH t AS (
  SELECT id, account_id, status, price, capture_amount, model, callback_url IS NOT NULL AS has_callback
  FROM tasks WHERE id = $1
), due AS (
  SELECT id, account_id, status, price, model,
         CASE WHEN status = 'failed' THEN 0 ELSE COALESCE(capture_amount, price) END AS captured
  FROM t WHERE status IN ('completed', 'failed')
), first AS (
  INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta)
  SELECT account_id, id,
         CASE WHEN status = 'completed' THEN 'capture' ELSE 'release' END,
         CASE WHEN status = 'completed' THEN captured ELSE price END,
         jsonb_build_object('model', model)
  FROM due
  ON CONFLICT (task_id, kind) DO NOTHING
  RETURNING kind
), remainder AS (
  INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta)
  SELECT d.account_id, d.id, 'release', d.price - d.captured, jsonb_build_object('model', d.model)
  FROM due d JOIN first f ON f.kind = 'capture'
  WHERE d.price > d.captured
  RETURNING 1
), moved AS (
  UPDATE accounts a
  SET held = a.held - d.price, spent = a.spent + d.captured, available = a.available + (d.price - d.captured), updated_at = now()
  FROM due d JOIN first f ON true
  WHERE a.id = d.account_id
  RETURNING 1
), mark AS (
  UPDATE tasks SET settled_at = now()
  WHERE id = $1 AND settled_at IS NULL AND EXISTS (SELECT 1 FROM due)
  RETURNING 1
)
SELECT t.status, t.has_callback, (SELECT kind FROM first) AS settled_kind,
       (SELECT count(*) FROM remainder)::int AS remainders, (SELECT count(*) FROM moved)::int AS moved,
       (SELECT count(*) FROM mark)::int AS marked
FROM (SELECT 1) one LEFT JOIN t ON true`;

/**
 * Settles one terminal task exactly once. Completed: capture `capture_amount` (the whole price when NULL) and, when
 * that is less than the hold, release the remainder; failed: release everything. One statement (SETTLE_SQL).
 */
export async function settle(ds: DataSource, taskId: string): Promise<Settlement> {
  const rows: Row[] = await ds.query(SETTLE_SQL, [taskId]);
  const r = rows[0];
  if (!r || r.status === null) return { outcome: 'not_found', hasCallback: false };
  const hasCallback = r.has_callback === true;
  if (r.status !== 'completed' && r.status !== 'failed') return { outcome: 'not_terminal', hasCallback };
  if (r.settled_kind === null) return { outcome: 'duplicate', hasCallback };
  return { outcome: r.settled_kind === 'capture' ? 'captured' : 'released', hasCallback };
}

/** settle(), the outcome only. */
export async function settleTask(ds: DataSource, taskId: string): Promise<SettleOutcome> {
  return (await settle(ds, taskId)).outcome;
}
