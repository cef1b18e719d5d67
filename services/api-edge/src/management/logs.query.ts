import { fromMinor } from '@gmg/contracts';
import type { ActivityRecord, LogsRepository, TaskLedgerRecord } from '@gmg/db';
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
  /** Chat calls (POST /v1/messages) only: the token usage they were charged for. */
  usage?: Record<string, number>;
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

const secs = (d: Date): number => Math.floor(d.getTime() / 1000);

/** The keyset cursor of every management list: opaque base64url of [created_at as Postgres text, id]. */
export function encodeCursor(ts: string, ref: string): string {
  return Buffer.from(JSON.stringify([ts, ref]), 'utf8').toString('base64url');
}

export function decodeCursor(c: string): { ts: string; ref: string } {
  try {
    const v = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && !Number.isNaN(Date.parse(v[0]))) {
      return { ts: v[0], ref: v[1] };
    }
  } catch {
    // fall through
  }
  throw new DomainError('invalid_request', "Invalid query field 'cursor': not a cursor this API returned", { field: 'cursor' });
}

/**
 * An account's activity, newest first: its tasks (each with its ledger entries) and its task-less ledger
 * entries (topups). The timestamp travels in the cursor as Postgres text (microsecond precision), never through
 * a JS Date.
 */
export async function queryLogs(logs: LogsRepository, f: LogsFilter): Promise<LogsPage> {
  const { cursor, ...filter } = f;
  const rows = await logs.activity({ ...filter, limit: f.limit + 1, ...(cursor ? { before: decodeCursor(cursor) } : {}) });
  const page = rows.slice(0, f.limit);
  const entries = await logs.entriesOf(
    f.accountId,
    page.filter((r) => r.type === 'task').map((r) => r.ref),
  );
  const byTask = groupByTask(entries);
  const items = page.map((r): LogItem => (r.type === 'task' ? taskItem(r, byTask.get(r.ref) ?? []) : ledgerItem(r)));
  const last = page[page.length - 1];
  return { items, next_cursor: rows.length > f.limit && last ? encodeCursor(last.ts, last.ref) : null };
}

function groupByTask(entries: TaskLedgerRecord[]): Map<string, LedgerLine[]> {
  const byTask = new Map<string, LedgerLine[]>();
  for (const e of entries) {
    const list = byTask.get(e.taskId) ?? [];
    list.push({ kind: e.kind, amount: fromMinor(e.amount), time: secs(e.createdAt) });
    byTask.set(e.taskId, list);
  }
  return byTask;
}

function taskItem(r: ActivityRecord, lines: LedgerLine[]): TaskLogItem {
  const price = fromMinor(r.amount);
  // a chat call captures its usage, less than its hold; a media task captures its price
  const capture = lines.find((l) => l.kind === 'capture');
  return {
    type: 'task',
    task_id: r.ref,
    model: r.model as string,
    status: r.status as string,
    cost: capture ? capture.amount : r.status === 'failed' ? 0 : price,
    price,
    settled: lines.some((l) => l.kind === 'capture' || l.kind === 'release'),
    time: secs(r.createdAt),
    completed_time: r.completedAt ? secs(r.completedAt) : null,
    entries: lines,
    ...(r.usage ? { usage: r.usage } : {}),
  };
}

/** A task-less entry; its ref is 'l' + the zero-padded entry id. */
function ledgerItem(r: ActivityRecord): LedgerLogItem {
  return { type: r.type as 'topup' | 'adjustment', entry_id: String(BigInt(r.ref.slice(1))), amount: fromMinor(r.amount), time: secs(r.createdAt) };
}
