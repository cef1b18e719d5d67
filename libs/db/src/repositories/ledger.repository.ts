import type { Row } from './sql';
import type { DataSource, EntityManager } from 'typeorm';

export type SettleOutcome = 'captured' | 'released' | 'duplicate' | 'not_terminal' | 'not_found';


/**
 * Settles one terminal task exactly once. Completed: capture `capture_amount` (the whole price when NULL) and, when
 * that is less than the hold, release the remainder; failed: release everything.
 * The first ledger row (capture, or release of a failed task) is inserted with ON CONFLICT DO NOTHING on
 * UNIQUE(task_id, kind) and gates everything else: the remainder release and the money move happen only when it
 * was inserted, in the same transaction. A terminal status and its capture amount never change after the
 * terminal transition, so a task is settled once and its entries always sum to the hold.
 */
export async function settleTask(ds: DataSource, taskId: string): Promise<SettleOutcome> {
  return ds.transaction(async (m: EntityManager) => {
    const tasks: Row[] = await m.query(`SELECT account_id, status, price, capture_amount, model FROM tasks WHERE id = $1`, [taskId]);
    const t = tasks[0];
    if (!t) return 'not_found';
    if (t.status !== 'completed' && t.status !== 'failed') return 'not_terminal';
    const price = BigInt(t.price as string);
    const captured = t.status === 'failed' ? 0n : t.capture_amount === null ? price : BigInt(t.capture_amount as string);
    const released = price - captured;
    const kind = t.status === 'completed' ? 'capture' : 'release';
    const meta = JSON.stringify({ model: t.model });
    const inserted: Row[] = await m.query(
      `INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta) VALUES ($1,$2,$3,$4,$5)
       ON CONFLICT (task_id, kind) DO NOTHING RETURNING id`,
      [t.account_id, taskId, kind, (kind === 'capture' ? captured : released).toString(), meta],
    );
    // Marks the task settled for the sweeper in the same transaction; on a duplicate it is already set (harmless).
    await m.query(`UPDATE tasks SET settled_at = now() WHERE id = $1 AND settled_at IS NULL`, [taskId]);
    if (inserted.length === 0) return 'duplicate';
    if (kind === 'capture' && released > 0n) {
      await m.query(`INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta) VALUES ($1,$2,'release',$3,$4)`, [
        t.account_id, taskId, released.toString(), meta,
      ]);
    }
    await m.query(
      `UPDATE accounts SET held = held - $2, spent = spent + $3, available = available + $4, updated_at = now() WHERE id = $1`,
      [t.account_id, price.toString(), captured.toString(), released.toString()],
    );
    return kind === 'capture' ? 'captured' : 'released';
  });
}
