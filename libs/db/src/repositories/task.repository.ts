import { rowsOf, type Row } from './sql';
import type { DataSource } from 'typeorm';
import { fromMinor, type NormalizedRequest, type Pool, type TaskError, type TaskResult, type TaskStatus } from '@gmg/contracts';
import { DomainError } from '@gmg/errors';
import { toAssetRow, type NewAsset } from './asset.repository';
import type { NewAssetGroup } from './asset-group.repository';
import { spendPeriodSql, type SpendCap } from './api-key.repository';

/**
 * What every read but the submit step gets of the request: the NormalizedRequest without its upstream body (media,
 * long fields) and billing lines, from the generated column `tasks.summary`; an art task keeps `upstreamBody.prompt`
 * (its native view shows it). The whole request is read by `getRequest` alone.
 */
export type TaskRequestSummary = Omit<NormalizedRequest, 'upstreamBody' | 'billing'> & { upstreamBody: { prompt?: unknown } };

/** A task as plain data (money as bigint); `request` is its summary, never the stored body. */
export interface TaskRecord {
  id: string;
  accountId: string;
  apiKeyId: string;
  model: string;
  requestedModel: string;
  pool: Pool;
  status: TaskStatus;
  progress: number;
  request: TaskRequestSummary;
  price: bigint;
  priceSnapshot: Record<string, unknown>;
  channelId: string | null;
  /** The channel key that submitted it (polls, cancel and downloads use it); null: the channel's own api_key. */
  channelKeyId?: string | null;
  upstreamTaskId: string | null;
  result: TaskResult | null;
  error: TaskError | null;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
  deadlineAt: Date;
  updatedAt: Date;
  /**
   * Set with the capture/release; null while unsettled. toTaskRecord always fills it; optional only so records
   * built by hand (test fixtures) stay valid.
   */
  settledAt?: Date | null;
  /**
   * What settlement captures when less than the hold (per-asset billing); null: the whole price. Optional for
   * the same reason as settledAt.
   */
  captureAmount?: bigint | null;
  /**
   * The upstream's own view of the task (art suite native state), as the worker last saw it; null when the
   * upstream has none. Optional for the same reason as settledAt.
   */
  native?: Record<string, unknown> | null;
  /** The submission's request id and trace id (support lookups). Optional for the same reason as settledAt. */
  requestId?: string | null;
  traceId?: string | null;
}

/** What a submit provides; the rest of the record is set by the database and the lifecycle. */
export type NewTask = Pick<TaskRecord, 'id' | 'accountId' | 'apiKeyId' | 'model' | 'requestedModel' | 'pool' | 'price' | 'priceSnapshot' | 'deadlineAt'> & {
  request: NormalizedRequest;
  /** The client's Idempotency-Key: a second task under the same key and API key is refused by the database. */
  idempotencyKey?: string;
  /** What the request under that key was (a hash): a retry with another body is told apart from a replay. */
  idempotencyFingerprint?: string;
  /** The edge request that made it (X-Request-Id) and its trace (X-Trace-Id, when tracing is on). */
  requestId?: string;
  traceId?: string;
  /** Where the signed webhook goes at the terminal state (checked at submit; docs/webhooks.md). */
  callbackUrl?: string;
  /**
   * The API key's in-flight limit (its own, else its group's; null or absent = none): the task is refused with 429
   * `rate_limited` when the key already has this many unfinished tasks — checked in the hold statement itself.
   */
  inflightLimit?: number | null;
  /**
   * The API key's spending cap (null or absent = none): the task is refused with 402 `payment_required` naming the cap
   * when the key's spend in the current period plus this price would pass it — checked and counted in the hold
   * statement itself (api_key_spend), so concurrent submits on every edge together never pass it.
   */
  cap?: SpendCap | null;
  /**
   * An avatar batch (spec 2.5): its `Pending` asset rows, in `groupId`, and that group when the submission makes a
   * new one. Written by the hold statement itself, so a refused hold (402, 429, a reused key) leaves neither behind.
   */
  avatarBatch?: AvatarBatch;
};

/** The asset rows (and the new group) an avatar submission writes with its task. */
export interface AvatarBatch {
  groupId: string;
  newGroup?: Pick<NewAssetGroup, 'name' | 'description' | 'autoCreated'>;
  assets: readonly NewAsset[];
}

/** Retry-After of a full in-flight budget: tasks take seconds to minutes. */
export const INFLIGHT_RETRY_AFTER_SECONDS = 5;

const WINDOW_WORDS = { day: 'per UTC day', month: 'per UTC month' } as const;

export const spendCapError = (cap: SpendCap): DomainError =>
  new DomainError(
    'payment_required',
    `Spending cap reached: this key may spend at most ${fromMinor(cap.maxSpend)} ${cap.window ? WINDOW_WORDS[cap.window] : 'over its life'} (max_spend); this request would pass it`,
    { maxSpend: fromMinor(cap.maxSpend), spendWindow: cap.window },
  );

export const inflightLimitError = (limit: number): DomainError =>
  new DomainError('rate_limited', `Too many unfinished tasks: this key may have at most ${limit} in flight; wait for some to finish`, {
    retryAfter: INFLIGHT_RETRY_AFTER_SECONDS,
    inflightLimit: limit,
  });

/** What a cancel found: it won the terminal transition, the task had already ended, or the caller has no such task. */
export type CancelOutcome = { outcome: 'cancelled'; task: TaskRecord } | { outcome: 'terminal'; task: TaskRecord } | { outcome: 'not_found' };

/** A submission whose Idempotency-Key already made a task: nothing was held; `existing` is that task. */
export class DuplicateSubmissionError extends Error {
  /** `sameRequest`: the fingerprints match (or one side has none: rows from before fingerprints were kept). */
  constructor(
    readonly existing: TaskRecord,
    readonly sameRequest: boolean,
  ) {
    super(`a task with this Idempotency-Key exists: ${existing.id}`);
    this.name = 'DuplicateSubmissionError';
  }
}

/** How long an Idempotency-Key stays bound to its task (the Redis record lives as long). */
export const IDEMPOTENCY_RETENTION_HOURS = 24;

export function toTaskRecord(r: Row): TaskRecord {
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    apiKeyId: r.api_key_id as string,
    model: r.model as string,
    requestedModel: r.requested_model as string,
    pool: r.pool as Pool,
    status: r.status as TaskStatus,
    progress: Number(r.progress),
    request: r.summary as TaskRequestSummary,
    price: BigInt(r.price as string),
    priceSnapshot: r.price_snapshot as Record<string, unknown>,
    channelId: (r.channel_id as string | null) ?? null,
    channelKeyId: (r.channel_key_id as string | null | undefined) ?? null,
    upstreamTaskId: (r.upstream_task_id as string | null) ?? null,
    result: (r.result as TaskResult | null) ?? null,
    error: (r.error as TaskError | null) ?? null,
    createdAt: new Date(r.created_at as string),
    startedAt: r.started_at ? new Date(r.started_at as string) : null,
    completedAt: r.completed_at ? new Date(r.completed_at as string) : null,
    deadlineAt: new Date(r.deadline_at as string),
    updatedAt: new Date(r.updated_at as string),
    settledAt: r.settled_at ? new Date(r.settled_at as string) : null,
    captureAmount: r.capture_amount === null || r.capture_amount === undefined ? null : BigInt(r.capture_amount as string),
    native: (r.native as Record<string, unknown> | null | undefined) ?? null,
    requestId: (r.request_id as string | null | undefined) ?? null,
    traceId: (r.trace_id as string | null | undefined) ?? null,
  };
}

const OPEN = `status IN ('pending','processing')`;

/**
 * Counter rows per API key of its open tasks (task_inflight, kept by triggers on `tasks`: migration
 * TaskInflightCounter1765069200000). Every hold statement counts its tasks on ONE row picked at random, so two edges
 * holding for one key at once rarely wait on each other's row; the in-flight check sums the key's rows.
 */
export const TASK_INFLIGHT_SHARDS = 16;

export const inflightShard = (): number => Math.floor(Math.random() * TASK_INFLIGHT_SHARDS);

/** The open tasks of the key `keyExpr` (a SQL expression): the sum of its counter rows, a bounded read. */
export const openOf = (keyExpr: string): string => `(SELECT COALESCE(sum(open), 0) FROM task_inflight WHERE api_key_id = ${keyExpr})`;

/**
 * The columns of a TaskRecord: every read and RETURNING names them (never `*`), so no poll, step, sweep or settlement
 * reads `request` — a body of up to the contract's cap — or sends it back over the wire.
 */
export const TASK_COLUMNS = `id, account_id, api_key_id, model, requested_model, pool, status, progress, summary, price,
  price_snapshot, channel_id, channel_key_id, upstream_task_id, result, error, created_at, started_at, completed_at, deadline_at, updated_at,
  settled_at, capture_amount, native, request_id, trace_id`;

/** Where a hold statement takes its tasks' money from. */
interface HoldFrom {
  /** 'account': the account row (`available` → `held`); 'lease': this edge's credit lease of the account. */
  from: 'account' | 'lease';
  /**
   * The account rows, when another transaction holds one: 'skip' its tasks (a batch: never waits, its caller holds
   * them one by one) or 'wait' for it (one task). A lease row is only ever locked by its own edge: always 'wait'.
   */
  locked?: 'skip' | 'wait';
  /** CTEs that write what the tasks bring along; they read `task`, so they write nothing for a refused task. */
  extra?: string;
}

/** The fields of a task in a hold statement's JSON array (toHoldRow), with their SQL types. */
const HOLD_FIELDS = [
  ['id', 'text'],
  ['account_id', 'uuid'],
  ['api_key_id', 'uuid'],
  ['model', 'text'],
  ['requested_model', 'text'],
  ['pool', 'text'],
  ['request', 'jsonb'],
  ['price', 'bigint'],
  ['price_snapshot', 'jsonb'],
  ['deadline_at', 'timestamptz'],
  ['idempotency_key', 'text'],
  ['idempotency_fingerprint', 'text'],
  ['request_id', 'text'],
  ['trace_id', 'text'],
  ['callback_url', 'text'],
  ['inflight_limit', 'int'],
  ['max_spend', 'bigint'],
  ['spend_window', 'text'],
] as const;

/**
 * THE hold statement: every task hold of the gateway is one of its three forms (HOLD_ONE_SQL, HOLD_MANY_SQL,
 * HOLD_LEASED_SQL), so the money rules below exist once. $1 the tasks as one JSON array (toHoldRow, plus `lease_id`
 * when paid from a lease), $2 their in-flight counter shard. The tasks are grouped by where their money comes from
 * (`g`: the account, or the lease), and per group all or nothing:
 * - `room`: every key of the group's tasks has in-flight room (its open tasks plus its tasks here ≤ its limit;
 *   read in the statement's snapshot, a soft limit: docs/rate-limits.md);
 * - `locked`: the group's row, locked in id order (an account row held elsewhere skipped or waited for, see
 *   `locked`; a lease only while `active`: a lease its edge stopped renewing and a sweeper closed takes no task);
 * - `hold`: ONE conditional move of the group's total — on the account row `available → held` only while
 *   `available ≥ Σ prices` (no overdraft); on the lease `used += Σ` only while `used + Σ ≤ amount`, the lease still
 *   active and of the tasks' one account (the money already moved to `held` when it was granted, ledger `hold` on
 *   the lease id, so `available + held` does not change; per closed lease hold(lease) = Σ holds of its tasks +
 *   release(lease));
 * - `caps`: per capped key of the group its period (spendPeriodSql, the database's clock) and its tasks' total; a
 *   group with more than one capped key is refused as a whole, writing nothing (its caller holds them one by one);
 * - lease form, `owners`: the accounts' rows FOR KEY SHARE (what the task and ledger rows' foreign keys take anyway),
 *   taken before the spend rows: every statement that locks a spend row (the holds, settlement) holds its account's
 *   row first, so a leased hold waiting for an account row that a row hold locked never holds a spend row that hold
 *   waits for (a deadlock a 200-way race found);
 * - `funded`: the groups whose locked row can pay (the same check as `hold`, on the row as locked, so the latest) and
 *   whose keys have room; `spend`: ONE conditional upsert per capped key of a funded group, `spent += Σ` only while
 *   `spent + Σ ≤ cap` — the row's latest version under its lock, so submits on every edge queue on it and together
 *   never pass the cap; `paid`: the funded groups whose capped key (if any) was counted; `hold` moves only theirs;
 * - per task let through: its row (with its counter shard, so the in-flight triggers count it) and its ledger
 *   `hold` (`meta.lease` when leased); the task id is the primary key, so a task is held at most once.
 * The answer has a row per group: `room_ok`, `cap_ok` (false: funded but its key's cap refused it), and the group's
 * written tasks (`id` null when none was written).
 */
const holdStatement = ({ from, locked = 'wait', extra = '' }: HoldFrom): string => {
  const g = from === 'account' ? 'account_id' : 'lease_id';
  const fields = from === 'lease' ? [['lease_id', 'text'] as const, ...HOLD_FIELDS] : HOLD_FIELDS;
  // after `funded`: the spend rows are locked after the group's row, in key order (two statements never cross)
  const capped = `spend AS (
     INSERT INTO api_key_spend AS s (api_key_id, period, spent, cap)
     SELECT c.api_key_id, c.period, c.amount, c.cap FROM caps c
     WHERE c.${g} IN (SELECT ${g} FROM funded) AND c.${g} NOT IN (SELECT ${g} FROM caps GROUP BY ${g} HAVING count(*) > 1)
       AND c.amount <= c.cap
     ORDER BY c.api_key_id, c.period
     ON CONFLICT (api_key_id, period) DO UPDATE SET spent = s.spent + EXCLUDED.spent, cap = EXCLUDED.cap
       WHERE s.spent + EXCLUDED.spent <= EXCLUDED.cap
     RETURNING api_key_id, period
   ), paid AS (
     SELECT f.${g} FROM funded f
     WHERE f.${g} NOT IN (SELECT ${g} FROM caps GROUP BY ${g} HAVING count(*) > 1)
       AND NOT EXISTS (SELECT 1 FROM caps c WHERE c.${g} = f.${g}
                         AND NOT EXISTS (SELECT 1 FROM spend WHERE spend.api_key_id = c.api_key_id AND spend.period = c.period))
   )`;
  const move =
    from === 'account'
      ? `total AS (
     SELECT account_id, sum(price) AS amount FROM b GROUP BY account_id
   ), locked AS (
     SELECT id, available FROM accounts WHERE id IN (SELECT account_id FROM total) ORDER BY id FOR UPDATE${locked === 'skip' ? ' SKIP LOCKED' : ''}
   ), funded AS (
     SELECT total.account_id FROM total JOIN room ON room.account_id = total.account_id JOIN locked ON locked.id = total.account_id
     WHERE locked.available >= total.amount AND room.ok
   ), ${capped}, hold AS (
     UPDATE accounts SET available = available - total.amount, held = held + total.amount, updated_at = now()
     FROM total JOIN room ON room.account_id = total.account_id
     WHERE accounts.id = total.account_id AND accounts.available >= total.amount AND room.ok
       AND accounts.id IN (SELECT id FROM locked) AND accounts.id IN (SELECT account_id FROM paid)
     RETURNING accounts.id
   )`
      : `total AS (
     SELECT lease_id, min(account_id::text)::uuid AS account_id, count(DISTINCT account_id) AS accounts, sum(price) AS amount
     FROM b GROUP BY lease_id
   ), locked AS (
     SELECT id, account_id, used, amount FROM credit_leases WHERE id IN (SELECT lease_id FROM total) AND status = 'active' ORDER BY id FOR UPDATE
   ), owners AS (
     SELECT id FROM accounts WHERE id IN (SELECT account_id FROM total) ORDER BY id FOR KEY SHARE
   ), funded AS (
     SELECT total.lease_id FROM total JOIN room ON room.lease_id = total.lease_id JOIN locked ON locked.id = total.lease_id
     WHERE locked.account_id = total.account_id AND total.accounts = 1 AND locked.used + total.amount <= locked.amount AND room.ok
       AND total.account_id IN (SELECT id FROM owners)
   ), ${capped}, hold AS (
     UPDATE credit_leases l SET used = l.used + total.amount
     FROM total JOIN room ON room.lease_id = total.lease_id
     WHERE l.id = total.lease_id AND l.id IN (SELECT id FROM locked) AND l.status = 'active'
       AND l.account_id = total.account_id AND total.accounts = 1 AND l.used + total.amount <= l.amount AND room.ok
       AND l.id IN (SELECT lease_id FROM paid)
     RETURNING l.id
   )`;
  return `WITH b AS (
     SELECT * FROM jsonb_to_recordset($1::jsonb) AS b(${fields.map(([name, type]) => `${name} ${type}`).join(', ')})
   ), per_key AS (
     SELECT ${g}, api_key_id, min(inflight_limit) AS lim, count(*) AS n FROM b GROUP BY ${g}, api_key_id
   ), room AS (
     SELECT k.${g}, bool_and(k.lim IS NULL OR k.n + ${openOf('k.api_key_id')} <= k.lim) AS ok
     FROM per_key k GROUP BY k.${g}
   ), caps AS (
     SELECT ${g}, api_key_id, ${spendPeriodSql('spend_window')} AS period, min(max_spend) AS cap, sum(price) AS amount
     FROM b WHERE max_spend IS NOT NULL GROUP BY ${g}, api_key_id, spend_window
   ), ${move}, task AS (
     INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, status, progress, request,
                        price, price_snapshot, deadline_at, idempotency_key, idempotency_fingerprint, request_id, trace_id,
                        callback_url, inflight_shard, spend_period)
     SELECT b.id, b.account_id, b.api_key_id, b.model, b.requested_model, b.pool, 'pending', 0, b.request, b.price,
            b.price_snapshot, b.deadline_at, b.idempotency_key, b.idempotency_fingerprint, b.request_id, b.trace_id,
            b.callback_url, $2::int, caps.period
     FROM b JOIN hold ON hold.id = b.${g} LEFT JOIN caps ON caps.${g} = b.${g} AND caps.api_key_id = b.api_key_id AND b.max_spend IS NOT NULL
     RETURNING ${TASK_COLUMNS}
   ), ledger AS (
     INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta)
     SELECT b.account_id, b.id, 'hold', b.price, jsonb_build_object('model', b.model${from === 'lease' ? `, 'lease', b.lease_id` : ''})
     FROM b JOIN hold ON hold.id = b.${g}
     RETURNING task_id
   )${extra}
   SELECT room.ok AS room_ok, (room.${g} NOT IN (SELECT ${g} FROM funded) OR room.${g} IN (SELECT ${g} FROM paid)) AS cap_ok, made.* FROM room
   LEFT JOIN (SELECT b.${g} AS held_from, task.* FROM b JOIN task ON task.id = b.id JOIN ledger ON ledger.task_id = b.id) made
     ON made.held_from = room.${g}`;
};

/**
 * The holds of a batch of tasks, of one or several accounts, on their account rows (HoldBatchingTaskRepository): the
 * account rows locked in id order, skipping any row another transaction holds, so one account whose row is held
 * (another edge's batch, a long transaction) cannot stall the other accounts' submits; its tasks are simply not
 * written and the caller holds them one by one (and those wait for the row). Exported for the mutation test
 * (ledger.mutation.int.test.ts) and the bench's plans.
 */
export const HOLD_MANY_SQL = holdStatement({ from: 'account', locked: 'skip' });

/**
 * The journal of task holds paid from credit leases (docs/reliability.md, "Hot accounts"): a batch of tasks, of any
 * accounts, each under its account's lease, WITHOUT touching an account row. Exported for the mutation test
 * (task-lease.crash.int.test.ts) and the bench's plans.
 */
export const HOLD_LEASED_SQL = holdStatement({ from: 'lease' });

/** One task on its account row (TaskRepository.createWithHold), waiting for the row when another transaction holds it. */
const HOLD_ONE_SQL = holdStatement({ from: 'account' });

/**
 * An avatar batch's rows in the one-task statement: $3 the new group (JSON object, or null: an existing group), $4
 * the assets (JSON array), $5 their group id. The foreign keys (asset → group, asset → task) are checked at the end
 * of the statement, when every row of it is there.
 */
const HOLD_ONE_AVATAR_SQL = holdStatement({
  from: 'account',
  extra: `, new_group AS (
     INSERT INTO asset_groups (id, account_id, name, description, auto_created)
     SELECT $5, task.account_id, g.name, g.description, g.auto_created
     FROM task, jsonb_to_record($3::jsonb) AS g(name text, description text, auto_created boolean)
     WHERE $3::jsonb IS NOT NULL
   ), new_assets AS (
     INSERT INTO avatar_assets (id, account_id, group_id, task_id, position, asset_type, name, url, project_name)
     SELECT r.id, task.account_id, $5, task.id, r.position, r.asset_type, r.name, r.url, r.project_name
     FROM task, jsonb_to_recordset($4::jsonb) AS r(id text, position int, asset_type text, name text, url text, project_name text)
   )`,
});

/** A task as one element of a hold statement's JSON array (`jsonb_to_recordset` names these fields). */
export const toHoldRow = (t: NewTask): Record<string, unknown> => ({
  id: t.id,
  account_id: t.accountId,
  api_key_id: t.apiKeyId,
  model: t.model,
  requested_model: t.requestedModel,
  pool: t.pool,
  request: t.request,
  price: t.price.toString(),
  price_snapshot: t.priceSnapshot,
  deadline_at: t.deadlineAt.toISOString(),
  idempotency_key: t.idempotencyKey ?? null,
  idempotency_fingerprint: t.idempotencyFingerprint ?? null,
  request_id: t.requestId ?? null,
  trace_id: t.traceId ?? null,
  callback_url: t.callbackUrl ?? null,
  inflight_limit: t.inflightLimit ?? null,
  max_spend: t.cap ? t.cap.maxSpend.toString() : null,
  spend_window: t.cap?.window ?? null,
});

/** A task to hold; with `leaseId`, paid from that credit lease (HOLD_LEASED_SQL). */
export interface HoldOf {
  task: NewTask;
  leaseId?: string;
}

/** What a hold statement wrote: the tasks by id (a task missing from it was refused with the rest of its group). */
export interface Held {
  tasks: Map<string, TaskRecord>;
  /** Some group was refused for a key's in-flight room (not for its money). */
  noRoom: boolean;
  /** Some group could pay but a key's spending cap refused it. */
  overCap: boolean;
}

/**
 * Runs a hold statement (`sql`: one of the three; a mutation test passes a broken one; `more`: its parameters after
 * $2). An error (an Idempotency-Key conflict, a lost connection) means nothing was written — or, when only the
 * answer was lost, everything: the callers' fallback finds such a task by its id.
 */
export async function holdTasks(ds: Pick<DataSource, 'query'>, ts: readonly HoldOf[], sql: string, more: unknown[] = []): Promise<Held> {
  if (ts.length === 0) return { tasks: new Map(), noRoom: false, overCap: false };
  // one JSON document for the whole batch: one serialisation here, one parse there (no array-literal escaping)
  const batch = JSON.stringify(ts.map(({ task, leaseId }) => (leaseId === undefined ? toHoldRow(task) : { ...toHoldRow(task), lease_id: leaseId })));
  const rows = rowsOf(await ds.query(sql, [batch, inflightShard(), ...more]));
  return {
    tasks: new Map(rows.filter((r) => r.id !== null).map((r) => [r.id as string, toTaskRecord(r)])),
    noRoom: rows.some((r) => r.room_ok === false),
    overCap: rows.some((r) => r.cap_ok === false),
  };
}

const avatarBatchParams = (b: AvatarBatch): unknown[] => [
  b.newGroup ? JSON.stringify({ name: b.newGroup.name, description: b.newGroup.description, auto_created: b.newGroup.autoCreated }) : null,
  JSON.stringify(b.assets.map(toAssetRow)),
  b.groupId,
];

/**
 * Task lifecycle writes. Every transition is one conditional UPDATE: a terminal task never changes again,
 * so only one writer wins the terminal transition (and only the winner enqueues the settlement).
 */
export class TaskRepository {
  /** A DataSource, or an EntityManager to write inside a caller's transaction. */
  constructor(protected readonly ds: Pick<DataSource, 'query'>) {}

  /**
   * One statement, so one implicit transaction and one round trip: the key's in-flight check (`room`: its unfinished
   * tasks, counted with tasks_key_open_idx and never past the limit), the conditional hold on the account (no
   * overdraft; no row → payment_required), the task row and the ledger `hold` entry. The task exists before the
   * client sees its id. The account row lock is held only for this statement and its commit, which is what bounds
   * the submit rate of one busy account (the edge holds an account's concurrent submits together instead:
   * HoldBatchingTaskRepository). The in-flight count is read in the statement's snapshot, so submits racing
   * each other may pass it together (a soft limit, docs/rate-limits.md); it used to be a query of its own before
   * this one. An avatar batch (`t.avatarBatch`) writes its group and asset rows in the same statement.
   */
  async createWithHold(t: NewTask): Promise<TaskRecord> {
    const batch = t.avatarBatch;
    const held = await holdTasks(this.ds, [{ task: t }], batch ? HOLD_ONE_AVATAR_SQL : HOLD_ONE_SQL, batch ? avatarBatchParams(batch) : []).catch(
      async (e: unknown) => {
        // The statement is atomic: on this conflict nothing was held or inserted.
        if (t.idempotencyKey && (e as { driverError?: { constraint?: string } }).driverError?.constraint === 'tasks_idempotency_uidx') {
          const duplicate = await this.duplicateOf(t.apiKeyId, t.idempotencyKey, t.idempotencyFingerprint);
          if (duplicate) throw duplicate;
        }
        throw e;
      },
    );
    const task = held.tasks.get(t.id);
    if (task) return task;
    if (held.noRoom) throw inflightLimitError(t.inflightLimit!);
    if (held.overCap && t.cap) throw spendCapError(t.cap);
    throw new DomainError('payment_required', 'Insufficient balance for this request');
  }

  /**
   * The task an Idempotency-Key of this API key already made, as the error a second submission under it gets
   * (`sameRequest` compares the request fingerprints). Null when the key made nothing (or was unbound).
   */
  async duplicateOf(apiKeyId: string, idempotencyKey: string, fingerprint?: string): Promise<DuplicateSubmissionError | null> {
    const rows: Row[] = await this.ds.query(`SELECT ${TASK_COLUMNS}, idempotency_fingerprint FROM tasks WHERE api_key_id = $1 AND idempotency_key = $2`, [
      apiKeyId,
      idempotencyKey,
    ]);
    if (!rows[0]) return null;
    const fp = rows[0].idempotency_fingerprint as string | null;
    return new DuplicateSubmissionError(toTaskRecord(rows[0]), !fp || !fingerprint || fp === fingerprint);
  }

  /** The task without its request body (a poll, a view rebuild, a step's state): see TaskRequestSummary. */
  async get(id: string): Promise<TaskRecord | null> {
    const rows: Row[] = await this.ds.query(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = $1`, [id]);
    return rows[0] ? toTaskRecord(rows[0]) : null;
  }

  /** Several tasks in one statement (a batch of due polls), by id; ids without a row are absent from the map. */
  async getMany(ids: readonly string[]): Promise<Map<string, TaskRecord>> {
    if (ids.length === 0) return new Map();
    const rows: Row[] = await this.ds.query(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ANY($1::text[])`, [ids]);
    return new Map(
      rows.map((r) => {
        const t = toTaskRecord(r);
        return [t.id, t];
      }),
    );
  }

  /** The whole stored request: only the step that submits upstream reads it. */
  async getRequest(id: string): Promise<NormalizedRequest | null> {
    const rows: Row[] = await this.ds.query(`SELECT request FROM tasks WHERE id = $1`, [id]);
    return rows[0] ? (rows[0].request as NormalizedRequest) : null;
  }

  /**
   * Unbinds Idempotency-Keys older than the retention, so a key may be reused after it (as the docs promise): at most
   * `limit` of them, oldest first along `tasks_idempotency_created_idx`, skipping rows another transaction holds.
   * One short statement whatever the backlog (after a long billing outage an unbounded UPDATE of hours of keys hit
   * the statement timeout on every sweep and never caught up); the caller repeats it while batches come back full.
   */
  async expireIdempotencyKeys(olderThanHours = IDEMPOTENCY_RETENTION_HOURS, limit = 5000): Promise<number> {
    const rows = rowsOf(
      await this.ds.query(
        `UPDATE tasks SET idempotency_key = NULL, idempotency_fingerprint = NULL
          WHERE id IN (SELECT id FROM tasks WHERE idempotency_key IS NOT NULL AND created_at < now() - ($1 || ' hours')::interval
                        ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING id`,
        [String(olderThanHours), limit],
      ),
    );
    return rows.length;
  }

  /**
   * Records the upstream assignment (and the channel key that made it: null for a channel's own api_key); moves
   * pending → processing. Null when the task is already terminal.
   */
  async markSubmitted(id: string, channelId: string, upstreamTaskId: string, channelKeyId: string | null = null): Promise<TaskRecord | null> {
    return this.one(
      // Only the first submit's id is kept: a duplicate step (a stalled job run twice, a reshard) that submitted
      // again gets null and cancels its own upstream task, instead of orphaning the first one.
      `UPDATE tasks SET status = 'processing', channel_id = $2, upstream_task_id = $3, channel_key_id = $4::uuid,
              started_at = COALESCE(started_at, now()), updated_at = now()
       WHERE id = $1 AND ${OPEN} AND (upstream_task_id IS NULL OR (upstream_task_id = $3 AND channel_id = $2)) RETURNING ${TASK_COLUMNS}`,
      [id, channelId, upstreamTaskId, channelKeyId],
    );
  }

  /** Progress only moves forward. Null when terminal (or unchanged). */
  async updateProgress(id: string, progress: number): Promise<TaskRecord | null> {
    const p = Math.max(0, Math.min(99, Math.floor(progress)));
    return this.one(
      `UPDATE tasks SET progress = $2, status = 'processing', updated_at = now()
       WHERE id = $1 AND ${OPEN} AND progress < $2 RETURNING ${TASK_COLUMNS}`,
      [id, p],
    );
  }

  /**
   * Stores the upstream's native view of an open task (and bumps updated_at, so the Redis view that carries it
   * is replaced). Null when the task is terminal: a finished task's native view is written with its transition.
   */
  async updateNative(id: string, native: Record<string, unknown>): Promise<TaskRecord | null> {
    return this.one(`UPDATE tasks SET native = $2, updated_at = now() WHERE id = $1 AND ${OPEN} RETURNING ${TASK_COLUMNS}`, [id, JSON.stringify(native)]);
  }

  /**
   * Terminal transition to completed. Null if another writer already ended the task. `captureAmount` (≤ the price;
   * capped here) makes settlement capture only that and release the rest; omitted, the whole price is captured.
   * `native`: the upstream's own final view of the task, when it has one.
   */
  /**
   * `submittedTo`: a synchronous vendor call that finished the task in its submit names its channel and upstream id
   * here, in the same statement, so no step ever sees a submitted task whose answer only lived in memory.
   */
  async complete(
    id: string,
    result: TaskResult,
    opts: {
      captureAmount?: bigint;
      native?: Record<string, unknown>;
      submittedTo?: { channelId: string; upstreamTaskId: string; channelKeyId?: string | null };
    } = {},
  ): Promise<TaskRecord | null> {
    return this.one(
      `UPDATE tasks SET status = 'completed', progress = 100, result = $2, completed_at = now(), updated_at = now(),
              capture_amount = LEAST($3::bigint, price), native = COALESCE($4::jsonb, native),
              channel_id = COALESCE($5::uuid, channel_id), upstream_task_id = COALESCE($6, upstream_task_id),
              channel_key_id = COALESCE($7::uuid, channel_key_id),
              started_at = COALESCE(started_at, now())
       WHERE id = $1 AND ${OPEN} RETURNING ${TASK_COLUMNS}`,
      [
        id,
        JSON.stringify(result),
        opts.captureAmount === undefined ? null : opts.captureAmount.toString(),
        opts.native ? JSON.stringify(opts.native) : null,
        opts.submittedTo?.channelId ?? null,
        opts.submittedTo?.upstreamTaskId ?? null,
        opts.submittedTo?.channelKeyId ?? null,
      ],
    );
  }

  /** Terminal transition to failed. Null if another writer already ended the task. */
  async fail(id: string, error: TaskError, native?: Record<string, unknown>): Promise<TaskRecord | null> {
    return this.one(
      `UPDATE tasks SET status = 'failed', error = $2, completed_at = now(), updated_at = now(),
              native = COALESCE($3::jsonb, native)
       WHERE id = $1 AND ${OPEN} RETURNING ${TASK_COLUMNS}`,
      [id, JSON.stringify(error), native ? JSON.stringify(native) : null],
    );
  }

  /**
   * The owner's cancel: the same one-statement terminal transition as `fail` (failed, `error` as given), limited to
   * the caller's account, so exactly one of cancel / complete / fail wins however they race; the winner settles.
   * When it did not win, one read tells "already ended" from "not yours or missing".
   */
  async cancel(id: string, accountId: string, error: TaskError): Promise<CancelOutcome> {
    const won = await this.one(
      `UPDATE tasks SET status = 'failed', error = $3, completed_at = now(), updated_at = now()
       WHERE id = $1 AND account_id = $2 AND ${OPEN} RETURNING ${TASK_COLUMNS}`,
      [id, accountId, JSON.stringify(error)],
    );
    if (won) return { outcome: 'cancelled', task: won };
    const task = await this.get(id);
    if (!task || task.accountId !== accountId) return { outcome: 'not_found' };
    // Not open, so terminal: the UPDATE above only skips open rows of another account.
    return { outcome: 'terminal', task };
  }

  /** Tasks made by a request (X-Request-Id) or in a trace (X-Trace-Id), newest first: support lookups. */
  async findByOrigin(by: { requestId?: string; traceId?: string }, limit = 20): Promise<TaskRecord[]> {
    const [column, value] = by.requestId ? ['request_id', by.requestId] : ['trace_id', by.traceId];
    if (!value) return [];
    const rows: Row[] = await this.ds.query(`SELECT ${TASK_COLUMNS} FROM tasks WHERE ${column} = $1 ORDER BY created_at DESC LIMIT $2`, [value, limit]);
    return rows.map(toTaskRecord);
  }

  private async one(sql: string, params: unknown[]): Promise<TaskRecord | null> {
    const rows = rowsOf(await this.ds.query(sql, params));
    return rows[0] ? toTaskRecord(rows[0]) : null;
  }
}
