import Joi from 'joi';
import type { DataSource } from 'typeorm';
import { fromMinor, type TaskError, type TaskResult } from '@gmg/contracts';
import {
  AccountRepository,
  ChannelRepository,
  ConsoleListRepository,
  TaskRepository,
  costMinor,
  toUnifiedTask,
  type ListPage,
  type ListPosition,
  type ListedTask,
  type TaskEntryRecord,
} from '@gmg/db';
import { DomainError } from '@gmg/errors';
import { decodeCursor, encodeCursor, type LedgerLine } from './logs.query';
import { accountView, type AccountView } from './management.service';
import { isUuid, validate } from './management.schemas';

/** The lists' common query (docs/management-api.md, "Console routes"). */
const page = {
  limit: Joi.number().integer().min(1).max(100).default(20),
  cursor: Joi.string().max(500),
};
const uuid = () =>
  Joi.string()
    .trim()
    .lowercase()
    .custom((v: string, h) => (isUuid(v) ? v : h.error('any.uuid')))
    .messages({ 'any.uuid': '{{#label}} must be an id (uuid)' });

export const accountsQuerySchema = Joi.object({ ...page, q: Joi.string().trim().min(1).max(200) });

export const TASK_LIST_POOLS = ['image', 'video', 'artgen', 'avatar', 'chat'] as const;
export const taskListQuerySchema = Joi.object({
  ...page,
  account_id: uuid(),
  key_id: uuid(),
  channel_id: uuid(),
  model: Joi.string().trim().min(1).max(200),
  status: Joi.string().valid('pending', 'processing', 'completed', 'failed'),
  pool: Joi.string().valid(...TASK_LIST_POOLS),
  from: Joi.number().integer().min(0),
  to: Joi.number()
    .integer()
    .min(0)
    .when('from', { is: Joi.exist(), then: Joi.number().greater(Joi.ref('from')) }),
});

interface PageQuery {
  limit: number;
  cursor?: string;
}
interface TaskListQuery extends PageQuery {
  account_id?: string;
  key_id?: string;
  channel_id?: string;
  model?: string;
  status?: ListedTask['status'];
  pool?: (typeof TASK_LIST_POOLS)[number];
  from?: number;
  to?: number;
}

export interface Page<T> {
  items: T[];
  /** Opaque; pass as `cursor` for the next (older) page. Null when nothing older can match. */
  next_cursor: string | null;
}

export interface TaskSummary {
  task_id: string;
  account_id: string;
  key_id: string;
  model: string;
  requested_model: string;
  pool: string;
  status: string;
  channel_id: string | null;
  price: number;
  cost: number;
  settled: boolean;
  created_at: number;
  completed_at: number | null;
  error: TaskError | null;
  trace_id: string | null;
  request_id: string | null;
}

export interface TimelineEvent {
  event: 'submitted' | 'hold' | 'started' | 'completed' | 'failed' | 'capture' | 'release' | 'settled' | (string & {});
  time: number;
  amount?: number;
  detail?: string;
}

export interface TaskDetail extends TaskSummary {
  progress: number;
  request: unknown;
  upstream_task_id: string | null;
  channel: { id: string; name: string } | null;
  deadline_at: number;
  result: TaskResult | null;
  native: Record<string, unknown> | null;
  timeline: TimelineEvent[];
  entries: LedgerLine[];
}

/** A request summary's strings past this many characters are cut (a prompt, a data URL): the detail stays small. */
export const REQUEST_STRING_MAX = 2000;

const secs = (d: Date): number => Math.floor(d.getTime() / 1000);
const secsOrNull = (d: Date | null | undefined): number | null => (d ? secs(d) : null);

/** A cursor this list issued, or 400 naming `cursor` (an account cursor's id is a uuid, a task's a task id). */
function positionOf(cursor: string | undefined, idOk: (id: string) => boolean): ListPosition | undefined {
  if (cursor === undefined) return undefined;
  const { ts, ref } = decodeCursor(cursor);
  if (!idOk(ref)) throw new DomainError('invalid_request', "Invalid query field 'cursor': not a cursor this API returned", { field: 'cursor' });
  return { ts, id: ref };
}

/** The walk's rows as a page: one more match than asked means the last one shown is the cursor; else where the walk stopped. */
function pageFrom<T, V>(p: ListPage<T>, limit: number, view: (row: T) => V): Page<V> {
  const shown = p.rows.slice(0, limit);
  const last = shown[shown.length - 1];
  const resume = p.rows.length > limit && last ? last.position : p.stoppedAt;
  return { items: shown.map(view), next_cursor: resume ? encodeCursor(resume.ts, resume.id) : null };
}

export const taskSummary = (t: ListedTask): TaskSummary => ({
  task_id: t.id,
  account_id: t.accountId,
  key_id: t.apiKeyId,
  model: t.model,
  requested_model: t.requestedModel,
  pool: t.pool,
  status: t.status,
  channel_id: t.channelId,
  price: fromMinor(t.price),
  cost: fromMinor(costMinor(t.status, t.price, t.captureAmount ?? t.chatCost)),
  settled: Boolean(t.settledAt),
  created_at: secs(t.createdAt),
  completed_at: secsOrNull(t.completedAt),
  error: t.error ? { code: t.error.code, message: t.error.message } : null,
  trace_id: t.traceId,
  request_id: t.requestId,
});

/** Long strings cut, at any depth: what the console shows of a stored request. */
export function clipStrings(v: unknown, max = REQUEST_STRING_MAX): unknown {
  if (typeof v === 'string') return v.length > max ? `${v.slice(0, max)}…` : v;
  if (Array.isArray(v)) return v.map((x) => clipStrings(x, max));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, clipStrings(x, max)]));
  return v;
}

const RANK: Record<string, number> = { submitted: 0, hold: 1, started: 2, completed: 3, failed: 3, capture: 4, release: 4, settled: 5 };

/** A task's life from its timestamps and its ledger entries, oldest first (polls are not recorded one by one). */
export function timelineOf(
  t: { createdAt: Date; startedAt: Date | null; completedAt: Date | null; settledAt?: Date | null; status: string; error: TaskError | null },
  entries: TaskEntryRecord[],
  channelName: string | undefined,
): TimelineEvent[] {
  const events: TimelineEvent[] = [{ event: 'submitted', time: secs(t.createdAt) }];
  if (t.startedAt) events.push({ event: 'started', time: secs(t.startedAt), ...(channelName ? { detail: channelName } : {}) });
  if (t.completedAt && (t.status === 'completed' || t.status === 'failed')) {
    events.push({ event: t.status, time: secs(t.completedAt), ...(t.status === 'failed' && t.error ? { detail: t.error.message } : {}) });
  }
  for (const e of entries) events.push({ event: e.kind, time: secs(e.createdAt), amount: fromMinor(e.amount) });
  if (t.settledAt) events.push({ event: 'settled', time: secs(t.settledAt) });
  // stable: equal times keep the lifecycle's order
  return events
    .map((e, i) => ({ e, i }))
    .sort((a, b) => a.e.time - b.e.time || (RANK[a.e.event] ?? 9) - (RANK[b.e.event] ?? 9) || a.i - b.i)
    .map((x) => x.e);
}

/**
 * The console's reads (issue 40): account search, the task list and a task's detail. Every list is a bounded keyset
 * walk (ConsoleListRepository); views are snake_case, money in currency units, no secret.
 */
export class ConsoleService {
  private readonly lists: ConsoleListRepository;
  private readonly tasks: TaskRepository;
  private readonly channels: ChannelRepository;
  private readonly accountRepo: AccountRepository;

  /** `scanBudget`: rows one page's walk may read (default LIST_SCAN_BUDGET; tests lower it). */
  constructor(
    ds: DataSource,
    private readonly scanBudget?: number,
  ) {
    this.accountRepo = new AccountRepository(ds);
    this.lists = new ConsoleListRepository(ds);
    this.tasks = new TaskRepository(ds);
    this.channels = new ChannelRepository(ds);
  }

  /** GET /api/accounts: an exact id, or a part of the name, newest first. */
  async accounts(query: unknown): Promise<Page<AccountView>> {
    const q = validate<PageQuery & { q?: string }>(accountsQuerySchema, query, 'query');
    const before = positionOf(q.cursor, isUuid);
    if (q.q !== undefined && isUuid(q.q)) {
      const a = await this.accountRepo.get(q.q.toLowerCase());
      return { items: a ? [accountView(a)] : [], next_cursor: null };
    }
    return pageFrom(await this.lists.accounts({ nameContains: q.q, before, limit: q.limit, budget: this.scanBudget }), q.limit, accountView);
  }

  /** GET /api/tasks (without request_id/trace_id): the filtered list, newest first. */
  async list(query: unknown): Promise<Page<TaskSummary>> {
    const q = validate<TaskListQuery>(taskListQuerySchema, query, 'query');
    const before = positionOf(q.cursor, (id) => /^task_[0-9A-Za-z]{1,64}$/.test(id));
    const p = await this.lists.tasks({
      accountId: q.account_id,
      apiKeyId: q.key_id,
      channelId: q.channel_id,
      model: q.model,
      status: q.status,
      pool: q.pool,
      from: q.from,
      to: q.to,
      before,
      limit: q.limit,
      budget: this.scanBudget,
    });
    return pageFrom(p, q.limit, taskSummary);
  }

  /** GET /api/tasks/{id}: the summary, the stored request summary, the result, the timeline and the ledger rows. */
  async detail(id: string): Promise<TaskDetail> {
    const t = /^task_[0-9A-Za-z]{1,64}$/.test(id) ? await this.tasks.get(id) : null;
    if (!t) throw new DomainError('not_found', `Task ${id} not found`);
    const [entries, channel, prompt] = await Promise.all([
      this.lists.entriesOfTask(t.accountId, t.id),
      t.channelId ? this.channels.get(t.channelId) : null,
      this.lists.promptOf(t.id, REQUEST_STRING_MAX + 1),
    ]);
    const unified = toUnifiedTask(t);
    const summary = taskSummary({
      ...t,
      captureAmount: t.captureAmount ?? null,
      chatCost: null,
      settledAt: t.settledAt ?? null,
      requestId: t.requestId ?? null,
      traceId: t.traceId ?? null,
    });
    return {
      ...summary,
      cost: unified.cost,
      progress: t.status === 'completed' ? 100 : t.progress,
      request: clipStrings({ ...t.request, upstreamBody: prompt === null ? {} : { prompt } }),
      upstream_task_id: t.upstreamTaskId,
      channel: channel ? { id: channel.id, name: channel.name } : null,
      deadline_at: secs(t.deadlineAt),
      result: unified.result ?? null,
      native: t.native ?? null,
      timeline: timelineOf(t, entries, channel?.name),
      entries: entries.map((e) => ({ kind: e.kind, amount: fromMinor(e.amount), time: secs(e.createdAt) })),
    };
  }
}
