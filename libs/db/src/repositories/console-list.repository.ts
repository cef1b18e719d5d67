import type { DataSource } from 'typeorm';
import type { Pool, TaskError, TaskStatus } from '@gmg/contracts';
import { ACCOUNT_COLUMNS, toAccount, type AccountRecord } from './account.repository';
import type { Row } from './sql';

/** Rows of the walked index one page may read, whatever the filters: what bounds every list of the console. */
export const LIST_SCAN_BUDGET = 5000;

/** A keyset position: `created_at` as Postgres text (microseconds, never through a JS Date) and the row's id. */
export interface ListPosition {
  ts: string;
  id: string;
}

/** One page of a bounded walk, newest first. */
export interface ListPage<T> {
  /** At most `limit` + 1 matching rows (one more than asked tells the caller another match exists). */
  rows: Array<T & { position: ListPosition }>;
  /**
   * Where the walk stopped when it read its whole scan budget (the oldest row it read, matching or not): more rows
   * may match beyond it. Null when the walk reached the end of the index range.
   */
  stoppedAt: ListPosition | null;
}

export interface TaskListFilter {
  accountId?: string;
  apiKeyId?: string;
  channelId?: string;
  /** The canonical model id. */
  model?: string;
  status?: TaskStatus;
  pool?: Pool | 'chat';
  /** Unix seconds, inclusive. */
  from?: number;
  /** Unix seconds, exclusive. */
  to?: number;
  before?: ListPosition;
  limit: number;
  /** Default LIST_SCAN_BUDGET (tests lower it). */
  budget?: number;
}

/** A task as a list shows it: no request, result or native view. */
export interface ListedTask {
  id: string;
  accountId: string;
  apiKeyId: string;
  model: string;
  requestedModel: string;
  pool: string;
  status: TaskStatus;
  channelId: string | null;
  price: bigint;
  captureAmount: bigint | null;
  /** A chat call's captured usage cost (minor units, `result.cost`); null for other tasks. */
  chatCost: bigint | null;
  error: TaskError | null;
  createdAt: Date;
  completedAt: Date | null;
  settledAt: Date | null;
  requestId: string | null;
  traceId: string | null;
}

export interface AccountListFilter {
  /** A case-insensitive part of the name. */
  nameContains?: string;
  before?: ListPosition;
  limit: number;
  budget?: number;
}

/** A ledger row of one task. */
export interface TaskEntryRecord {
  kind: string;
  amount: bigint;
  createdAt: Date;
}

const LISTED_TASK_COLUMNS = `t.id, t.account_id, t.api_key_id, t.model, t.requested_model, t.pool, t.status, t.channel_id, t.price::text AS price,
  t.capture_amount::text AS capture_amount, CASE WHEN t.pool = 'chat' AND t.result->>'cost' ~ '^[0-9]+$' THEN t.result->>'cost' END AS chat_cost,
  t.error, t.created_at, t.completed_at, t.settled_at, t.request_id, t.trace_id, t.created_at::text AS ts`;

const big = (v: unknown): bigint | null => (v === null || v === undefined ? null : BigInt(v as string));
const date = (v: unknown): Date | null => (v ? new Date(v as string) : null);

const toListedTask = (r: Row): ListedTask & { position: ListPosition } => ({
  id: r.id as string,
  accountId: r.account_id as string,
  apiKeyId: r.api_key_id as string,
  model: r.model as string,
  requestedModel: r.requested_model as string,
  pool: r.pool as string,
  status: r.status as TaskStatus,
  channelId: (r.channel_id as string | null) ?? null,
  price: BigInt(r.price as string),
  captureAmount: big(r.capture_amount),
  chatCost: big(r.chat_cost),
  error: (r.error as TaskError | null) ?? null,
  createdAt: new Date(r.created_at as string),
  completedAt: date(r.completed_at),
  settledAt: date(r.settled_at),
  requestId: (r.request_id as string | null) ?? null,
  traceId: (r.trace_id as string | null) ?? null,
  position: { ts: r.ts as string, id: r.id as string },
});

/**
 * The console's lists (GET /api/tasks, GET /api/accounts): keyset pages newest first on (created_at, id) that read
 * at most `budget` rows of one index, whatever the filters. The walk follows the most selective index a filter
 * allows (an account's tasks, a key's, or all of them: migrations ConsoleListIndexes1765900000000 and the initial
 * schema); the other filters are checked on the rows it read. A page may therefore end short with `stoppedAt` set:
 * the caller hands that on as its cursor.
 */
export class ConsoleListRepository {
  constructor(private readonly ds: Pick<DataSource, 'query'>) {}

  async tasks(f: TaskListFilter): Promise<ListPage<ListedTask>> {
    const params: unknown[] = [];
    const p = (v: unknown): string => {
      params.push(v);
      return `$${params.length}`;
    };
    // the walk: the one equality its index leads with, the time range and the keyset
    const walk: string[] = [];
    const rest: string[] = [];
    if (f.accountId !== undefined) walk.push(`account_id = ${p(f.accountId)}::uuid`);
    if (f.apiKeyId !== undefined) (walk.length ? rest : walk).push(`api_key_id = ${p(f.apiKeyId)}::uuid`);
    if (f.from !== undefined) walk.push(`created_at >= to_timestamp(${p(f.from)})`);
    if (f.to !== undefined) walk.push(`created_at < to_timestamp(${p(f.to)})`);
    if (f.before) walk.push(`(created_at, id) < (${p(f.before.ts)}::timestamptz, ${p(f.before.id)})`);
    if (f.channelId !== undefined) rest.push(`channel_id = ${p(f.channelId)}::uuid`);
    if (f.model !== undefined) rest.push(`model = ${p(f.model)}`);
    if (f.status !== undefined) rest.push(`status = ${p(f.status)}`);
    if (f.pool !== undefined) rest.push(`pool = ${p(f.pool)}`);
    const budget = p(f.budget ?? LIST_SCAN_BUDGET);
    const limit = p(f.limit + 1);
    const rows: Row[] = await this.ds.query(
      `WITH w AS MATERIALIZED (
         SELECT id, created_at, api_key_id, channel_id, model, status, pool FROM tasks
          ${walk.length ? `WHERE ${walk.join(' AND ')}` : ''}
          ORDER BY created_at DESC, id DESC LIMIT ${budget}),
       m AS (SELECT id FROM w ${rest.length ? `WHERE ${rest.join(' AND ')}` : ''} ORDER BY created_at DESC, id DESC LIMIT ${limit})
       ${edgeOf(budget)}
       SELECT x.*, e.edge_ts, e.edge_id FROM (SELECT 1) one
         LEFT JOIN (SELECT ${LISTED_TASK_COLUMNS} FROM m JOIN tasks t ON t.id = m.id) x ON true
         LEFT JOIN edge e ON true
        ORDER BY x.created_at DESC, x.id DESC`,
      params,
    );
    return pageOf(rows, toListedTask);
  }

  async accounts(f: AccountListFilter): Promise<ListPage<AccountRecord>> {
    const params: unknown[] = [];
    const p = (v: unknown): string => {
      params.push(v);
      return `$${params.length}`;
    };
    const walk = f.before ? [`(created_at, id) < (${p(f.before.ts)}::timestamptz, ${p(f.before.id)}::uuid)`] : [];
    const rest = f.nameContains !== undefined ? [`strpos(lower(name), lower(${p(f.nameContains)})) > 0`] : [];
    const budget = p(f.budget ?? LIST_SCAN_BUDGET);
    const limit = p(f.limit + 1);
    const rows: Row[] = await this.ds.query(
      `WITH w AS MATERIALIZED (
         SELECT ${ACCOUNT_COLUMNS}, created_at::text AS ts
           FROM accounts ${walk.length ? `WHERE ${walk.join(' AND ')}` : ''}
          ORDER BY created_at DESC, id DESC LIMIT ${budget})
       ${edgeOf(budget)}
       SELECT x.*, e.edge_ts, e.edge_id FROM (SELECT 1) one
         LEFT JOIN (SELECT * FROM w ${rest.length ? `WHERE ${rest.join(' AND ')}` : ''} ORDER BY created_at DESC, id DESC LIMIT ${limit}) x ON true
         LEFT JOIN edge e ON true
        ORDER BY x.created_at DESC, x.id DESC`,
      params,
    );
    return pageOf(rows, (r) => ({ ...toAccount(r), position: { ts: r.ts as string, id: r.id as string } }));
  }

  /**
   * The prompt the task was submitted with (the stored request's `upstreamBody.prompt`, which the summary column keeps
   * for art-suite tasks only), cut to `max` characters in the database; null when it has none or is not text.
   */
  async promptOf(taskId: string, max: number): Promise<string | null> {
    const rows: Row[] = await this.ds.query(
      `SELECT CASE WHEN jsonb_typeof(request #> '{upstreamBody,prompt}') = 'string' THEN left(request #>> '{upstreamBody,prompt}', $2) END AS prompt
         FROM tasks WHERE id = $1`,
      [taskId, max],
    );
    return (rows[0]?.prompt as string | null | undefined) ?? null;
  }

  /** The ledger rows of one task, in the order they were written (at most one hold, capture, release). */
  async entriesOfTask(accountId: string, taskId: string): Promise<TaskEntryRecord[]> {
    const rows: Row[] = await this.ds.query(
      `SELECT kind, amount::text AS amount, created_at FROM ledger_entries WHERE account_id = $1 AND task_id = $2 ORDER BY id`,
      [accountId, taskId],
    );
    return rows.map((r) => ({ kind: r.kind as string, amount: BigInt(r.amount as string), createdAt: new Date(r.created_at as string) }));
  }
}

/**
 * The oldest row the walk `w` read, when it read its whole budget (the parameter `budget`): the position a short
 * page's cursor resumes from.
 */
const edgeOf = (budget: string): string =>
  `, edge AS (SELECT created_at::text AS edge_ts, id::text AS edge_id FROM w WHERE (SELECT count(*) FROM w) = ${budget} ORDER BY created_at, id LIMIT 1)`;

/** The statement's rows (one with only the edge columns when nothing matched) as a page. */
function pageOf<T>(rows: Row[], map: (r: Row) => T & { position: ListPosition }): ListPage<T> {
  const edge = rows[0];
  return {
    rows: rows.filter((r) => r.id !== null && r.id !== undefined).map(map),
    stoppedAt: edge?.edge_id ? { ts: edge.edge_ts as string, id: edge.edge_id as string } : null,
  };
}
