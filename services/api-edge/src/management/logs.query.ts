import type { DataSource } from 'typeorm';
import { fromMinor } from '@gmg/contracts';
import { DomainError } from '@gmg/errors';

export interface LogsFilter {
  accountId: string;
  limit: number;
  cursor?: string;
  /** Unix seconds, inclusive. */
  from?: number;
  /** Unix seconds, exclusive. */
  to?: number;
  model?: string;
}

export interface LedgerLine {
  kind: string;
  amount: number;
  time: number;
}

/** One task with its cost and its ledger trail (hold, then capture or release). */
export interface TaskLogItem {
  type: 'task';
  task_id: string;
  model: string;
  status: string;
  /** What the task costs: its price, 0 once failed (refunded). Currency units. */
  cost: number;
  /** The price held at submit. */
  price: number;
  settled: boolean;
  time: number;
  completed_time: number | null;
  entries: LedgerLine[];
}

/** Money moved without a task: topups and adjustments. */
export interface LedgerLogItem {
  type: 'topup' | 'adjustment';
  entry_id: string;
  amount: number;
  time: number;
}

export type LogItem = TaskLogItem | LedgerLogItem;

export interface LogsPage {
  items: LogItem[];
  /** Opaque; pass as `cursor` for the next (older) page. Null on the last page. */
  next_cursor: string | null;
}

type Row = Record<string, unknown>;
const secs = (v: unknown): number => Math.floor(new Date(v as string).getTime() / 1000);

function encodeCursor(ts: string, ref: string): string {
  return Buffer.from(JSON.stringify([ts, ref]), 'utf8').toString('base64url');
}

function decodeCursor(c: string): [string, string] {
  try {
    const v = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && !Number.isNaN(Date.parse(v[0]))) {
      return [v[0], v[1]];
    }
  } catch {
    // fall through
  }
  throw new DomainError('invalid_request', "Invalid query field 'cursor': not a cursor this API returned", { field: 'cursor' });
}

/**
 * An account's activity, newest first: its tasks (each with its ledger entries) and its task-less ledger
 * entries (topups), merged on (created_at, ref) so keyset pagination is stable while new rows arrive.
 * The timestamp travels in the cursor as Postgres text (microsecond precision), never through a JS Date.
 */
export async function queryLogs(ds: DataSource, f: LogsFilter): Promise<LogsPage> {
  const params: unknown[] = [f.accountId];
  const p = (v: unknown): string => {
    params.push(v);
    return `$${params.length}`;
  };
  const common: string[] = [];
  if (f.from !== undefined) common.push(`created_at >= to_timestamp(${p(f.from)})`);
  if (f.to !== undefined) common.push(`created_at < to_timestamp(${p(f.to)})`);
  if (f.cursor) {
    const [ts, ref] = decodeCursor(f.cursor);
    common.push(`(created_at, REF) < (${p(ts)}::timestamptz, ${p(ref)})`);
  }
  const taskWhere = ['account_id = $1', ...common.map((c) => c.replace('REF', 'id'))];
  const ledgerRef = `('l' || lpad(id::text, 19, '0'))`;
  const ledgerWhere = ['account_id = $1', 'task_id IS NULL', ...common.map((c) => c.replace('REF', ledgerRef))];
  if (f.model !== undefined) {
    const m = p(f.model);
    taskWhere.push(`(model = ${m} OR requested_model = ${m})`);
    ledgerWhere.push('false');
  }
  const limit = p(f.limit + 1);
  const rows: Row[] = await ds.query(
    `SELECT * FROM (
       (SELECT 'task' AS type, t.id AS ref, t.requested_model AS model, t.status, t.price::text AS amount, t.created_at AS at,
               t.completed_at, t.created_at::text AS ts, t.capture_amount::text AS captured
          FROM tasks t WHERE ${taskWhere.join(' AND ')} ORDER BY t.created_at DESC, t.id DESC LIMIT ${limit})
       UNION ALL
       (SELECT l.kind, ${ledgerRef}, NULL, NULL, l.amount::text, l.created_at, NULL, l.created_at::text, NULL
          FROM ledger_entries l WHERE ${ledgerWhere.join(' AND ')} ORDER BY l.created_at DESC, l.id DESC LIMIT ${limit})
     ) u ORDER BY u.at DESC, u.ref DESC LIMIT ${limit}`,
    params,
  );
  const page = rows.slice(0, f.limit);
  const taskIds = page.filter((r) => r.type === 'task').map((r) => r.ref as string);
  const entries: Row[] = taskIds.length
    ? await ds.query(
        `SELECT task_id, kind, amount::text AS amount, created_at FROM ledger_entries
         WHERE account_id = $1 AND task_id = ANY($2) ORDER BY id`,
        [f.accountId, taskIds],
      )
    : [];
  const byTask = new Map<string, LedgerLine[]>();
  for (const e of entries) {
    const list = byTask.get(e.task_id as string) ?? [];
    list.push({ kind: e.kind as string, amount: fromMinor(e.amount as string), time: secs(e.created_at) });
    byTask.set(e.task_id as string, list);
  }
  const items = page.map((r): LogItem => {
    if (r.type === 'task') {
      const lines = byTask.get(r.ref as string) ?? [];
      const price = fromMinor(r.amount as string);
      return {
        type: 'task',
        task_id: r.ref as string,
        model: r.model as string,
        status: r.status as string,
        // a completed task with a capture amount (avatar batches) costs what is captured, not the hold
        cost: r.status === 'failed' ? 0 : r.status === 'completed' && r.captured ? fromMinor(r.captured as string) : price,
        price,
        settled: lines.some((l) => l.kind === 'capture' || l.kind === 'release'),
        time: secs(r.at),
        completed_time: r.completed_at ? secs(r.completed_at) : null,
        entries: lines,
      };
    }
    return { type: r.type as 'topup' | 'adjustment', entry_id: String(BigInt((r.ref as string).slice(1))), amount: fromMinor(r.amount as string), time: secs(r.at) };
  });
  const last = page[page.length - 1];
  return { items, next_cursor: rows.length > f.limit && last ? encodeCursor(last.ts as string, last.ref as string) : null };
}
