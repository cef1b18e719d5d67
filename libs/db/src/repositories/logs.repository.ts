import type { DataSource } from 'typeorm';
import type { Row } from './sql';

export interface ActivityFilter {
  accountId: string;
  /** Rows to return at most (the caller asks one more than a page to know whether another follows). */
  limit: number;
  /** Unix seconds, inclusive. */
  from?: number;
  /** Unix seconds, exclusive. */
  to?: number;
  /** Tasks of this model (canonical or requested name) only; task-less entries are then left out. */
  model?: string;
  /** Keyset position: rows strictly older than (created_at, ref). `ts` is Postgres timestamptz text. */
  before?: { ts: string; ref: string };
}

/** One line of an account's activity: a task, or a ledger entry without a task (topup, adjustment). */
export interface ActivityRecord {
  /** 'task', or the ledger entry's kind. */
  type: string;
  /** Task id, or 'l' + the entry id zero-padded to 19 digits (so both order as text). */
  ref: string;
  model: string | null;
  status: string | null;
  /** Task price or entry amount, minor units. */
  amount: bigint;
  createdAt: Date;
  completedAt: Date | null;
  /** created_at as Postgres text (microseconds), for a cursor that never goes through a JS Date. */
  ts: string;
  /** Chat calls: the usage stored on the result. */
  usage: Record<string, number> | null;
}

export interface TaskLedgerRecord {
  taskId: string;
  kind: string;
  amount: bigint;
  createdAt: Date;
}

const LEDGER_REF = `('l' || lpad(id::text, 19, '0'))`;

/** Reads an account's activity log (GET /api/logs): tasks and task-less ledger entries, newest first. */
export class LogsRepository {
  constructor(private readonly ds: DataSource) {}

  /** Tasks and task-less entries merged on (created_at, ref), so keyset pages stay stable while rows arrive. */
  async activity(f: ActivityFilter): Promise<ActivityRecord[]> {
    const params: unknown[] = [f.accountId];
    const p = (v: unknown): string => {
      params.push(v);
      return `$${params.length}`;
    };
    const common = activityConditions(f, p);
    const taskWhere = ['account_id = $1', ...common.map((c) => c.replace('REF', 'id'))];
    const ledgerWhere = ['account_id = $1', 'task_id IS NULL', ...common.map((c) => c.replace('REF', LEDGER_REF))];
    if (f.model !== undefined) {
      const m = p(f.model);
      taskWhere.push(`(model = ${m} OR requested_model = ${m})`);
      ledgerWhere.push('false');
    }
    const limit = p(f.limit);
    const rows: Row[] = await this.ds.query(
      `SELECT * FROM (
         (SELECT 'task' AS type, t.id AS ref, t.requested_model AS model, t.status, t.price::text AS amount, t.created_at AS at,
                 t.completed_at, t.created_at::text AS ts, t.result->'usage' AS usage
            FROM tasks t WHERE ${taskWhere.join(' AND ')} ORDER BY t.created_at DESC, t.id DESC LIMIT ${limit})
         UNION ALL
         (SELECT l.kind, ${LEDGER_REF}, NULL, NULL, l.amount::text, l.created_at, NULL, l.created_at::text, NULL
            FROM ledger_entries l WHERE ${ledgerWhere.join(' AND ')} ORDER BY l.created_at DESC, l.id DESC LIMIT ${limit})
       ) u ORDER BY u.at DESC, u.ref DESC LIMIT ${limit}`,
      params,
    );
    return rows.map(toActivity);
  }

  /** The ledger entries of these tasks of the account, in the order they were written. */
  async entriesOf(accountId: string, taskIds: string[]): Promise<TaskLedgerRecord[]> {
    if (taskIds.length === 0) return [];
    const rows: Row[] = await this.ds.query(
      `SELECT task_id, kind, amount::text AS amount, created_at FROM ledger_entries
       WHERE account_id = $1 AND task_id = ANY($2) ORDER BY id`,
      [accountId, taskIds],
    );
    return rows.map((r) => ({
      taskId: r.task_id as string,
      kind: r.kind as string,
      amount: BigInt(r.amount as string),
      createdAt: new Date(r.created_at as string),
    }));
  }
}

/** Time window and keyset conditions shared by both halves; `REF` stands for each half's ref expression. */
function activityConditions(f: ActivityFilter, p: (v: unknown) => string): string[] {
  const common: string[] = [];
  if (f.from !== undefined) common.push(`created_at >= to_timestamp(${p(f.from)})`);
  if (f.to !== undefined) common.push(`created_at < to_timestamp(${p(f.to)})`);
  if (f.before) common.push(`(created_at, REF) < (${p(f.before.ts)}::timestamptz, ${p(f.before.ref)})`);
  return common;
}

function toActivity(r: Row): ActivityRecord {
  return {
    type: r.type as string,
    ref: r.ref as string,
    model: (r.model as string | null) ?? null,
    status: (r.status as string | null) ?? null,
    amount: BigInt(r.amount as string),
    createdAt: new Date(r.at as string),
    completedAt: r.completed_at ? new Date(r.completed_at as string) : null,
    ts: r.ts as string,
    usage: (r.usage as Record<string, number> | null) ?? null,
  };
}
