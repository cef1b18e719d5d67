import type { DataSource } from 'typeorm';
import { rowsOf } from './sql';
import { holdBatchRows, inflightShard, insertHeldTasks, openOf, toHoldRow, toTaskRecord, type NewTask, type TaskRecord } from './task.repository';

/** A task to be held from a credit lease its edge holds for the task's account. */
export interface LeasedTask {
  task: NewTask;
  leaseId: string;
}

/**
 * The journal of task holds paid from credit leases (docs/reliability.md, "Hot accounts"): ONE statement writes a
 * batch of tasks, of any accounts, each under its account's lease, WITHOUT touching an account row — the money was
 * moved from `available` to `held` when the lease was granted (ledger `hold` on the lease id). Per lease, all or
 * nothing:
 * - `lease`: the lease row, locked (id order) and only while `active`: a lease its edge stopped renewing and a
 *   sweeper closed takes no task afterwards (its `release` already returned `amount - used`);
 * - `spend`: `used += Σ prices` only while `used + Σ ≤ amount` (the lease never pays more than it holds) and only
 *   when every key of the lease's tasks has in-flight room (its counter rows plus its tasks here ≤ its limit);
 * - per task written: its row (with its counter shard, so the in-flight triggers count it) and its ledger `hold`
 *   with `meta.lease`: the task's money moves from the lease to the task inside `held` (so `available + held` does
 *   not change), and settlement captures / releases it like any hold. Per closed lease:
 *   hold(lease) = Σ holds of its tasks + release(lease).
 * The task exists, with its hold, before its submitter answers; a task refused here is held directly by the caller.
 * $1 the tasks as one JSON array, $2 the counter shard. Exported for the mutation test.
 */
export const HOLD_LEASED_SQL = `WITH b AS (
     ${holdBatchRows('lease_id text, ')}
   ), per_key AS (
     SELECT lease_id, api_key_id, min(inflight_limit) AS lim, count(*) AS n FROM b GROUP BY lease_id, api_key_id
   ), room AS (
     SELECT k.lease_id, bool_and(k.lim IS NULL OR k.n + ${openOf('k.api_key_id')} <= k.lim) AS ok
     FROM per_key k GROUP BY k.lease_id
   ), total AS (
     SELECT lease_id, min(account_id::text)::uuid AS account_id, count(DISTINCT account_id) AS accounts, sum(price) AS amount
     FROM b GROUP BY lease_id
   ), lease AS (
     SELECT id FROM credit_leases WHERE id IN (SELECT lease_id FROM total) AND status = 'active' ORDER BY id FOR UPDATE
   ), spend AS (
     UPDATE credit_leases l SET used = l.used + total.amount
     FROM total JOIN room ON room.lease_id = total.lease_id
     WHERE l.id = total.lease_id AND l.id IN (SELECT id FROM lease) AND l.status = 'active'
       AND l.account_id = total.account_id AND total.accounts = 1 AND l.used + total.amount <= l.amount AND room.ok
     RETURNING l.id
   ), task AS (
     ${insertHeldTasks('JOIN spend ON spend.id = b.lease_id')}
   ), ledger AS (
     INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta)
     SELECT b.account_id, b.id, 'hold', b.price, jsonb_build_object('model', b.model, 'lease', b.lease_id)
     FROM b JOIN spend ON spend.id = b.lease_id
     RETURNING task_id
   )
   SELECT task.* FROM task JOIN ledger ON ledger.task_id = task.id`;

/**
 * HOLD_LEASED_SQL (`sql`: a mutation test passes a broken one). The written tasks by id; a task missing from it was
 * refused with the rest of its lease's tasks (the lease closed or short, or a key without room). An error (an
 * Idempotency-Key conflict, a lost connection) means nothing was written — or, when only the answer was lost,
 * everything: the caller's fallback finds such a task by its id.
 */
export async function holdLeased(ds: Pick<DataSource, 'query'>, ts: readonly LeasedTask[], sql = HOLD_LEASED_SQL): Promise<Map<string, TaskRecord>> {
  if (ts.length === 0) return new Map();
  const batch = JSON.stringify(ts.map(({ task, leaseId }) => ({ ...toHoldRow(task), lease_id: leaseId })));
  const rows = rowsOf(await ds.query(sql, [batch, inflightShard()]));
  return new Map(rows.map((r) => [r.id as string, toTaskRecord(r)]));
}
