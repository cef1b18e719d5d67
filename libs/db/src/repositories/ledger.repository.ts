import type { Row } from './sql';
import type { DataSource, EntityManager } from 'typeorm';

export type SettleOutcome = 'captured' | 'released' | 'duplicate' | 'not_terminal' | 'not_found';


/**
 * Settles one terminal task exactly once: capture (completed) or release (failed).
 * The ledger row is inserted with ON CONFLICT DO NOTHING on UNIQUE(task_id, kind); money moves only when
 * the row was inserted, in the same transaction. A terminal status never changes, so a task never gets both.
 */
export async function settleTask(ds: DataSource, taskId: string): Promise<SettleOutcome> {
  return ds.transaction(async (m: EntityManager) => {
    const tasks: Row[] = await m.query(`SELECT account_id, status, price, model FROM tasks WHERE id = $1`, [taskId]);
    const t = tasks[0];
    if (!t) return 'not_found';
    if (t.status !== 'completed' && t.status !== 'failed') return 'not_terminal';
    const kind = t.status === 'completed' ? 'capture' : 'release';
    const inserted: Row[] = await m.query(
      `INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta) VALUES ($1,$2,$3,$4,$5)
       ON CONFLICT (task_id, kind) DO NOTHING RETURNING id`,
      [t.account_id, taskId, kind, t.price, JSON.stringify({ model: t.model })],
    );
    // Marks the task settled for the sweeper in the same transaction; on a duplicate it is already set (harmless).
    await m.query(`UPDATE tasks SET settled_at = now() WHERE id = $1 AND settled_at IS NULL`, [taskId]);
    if (inserted.length === 0) return 'duplicate';
    const move =
      kind === 'capture'
        ? `UPDATE accounts SET held = held - $2, spent = spent + $2, updated_at = now() WHERE id = $1`
        : `UPDATE accounts SET held = held - $2, available = available + $2, updated_at = now() WHERE id = $1`;
    await m.query(move, [t.account_id, t.price]);
    return kind === 'capture' ? 'captured' : 'released';
  });
}
