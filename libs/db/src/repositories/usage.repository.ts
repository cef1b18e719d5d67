import type { DataSource, EntityManager } from 'typeorm';
import { rowsOf, type Row } from './sql';

/** `channel_id` of a task no channel served (the rollup's primary key needs a value). */
export const NO_CHANNEL = '00000000-0000-0000-0000-000000000000';

/** Duration histograms: bucket 0 is < 10 ms; bucket i ≥ 1 is [10·1.25^(i-1), 10·1.25^i) ms; the last is open. */
const HIST_BASE_MS = 10;
const HIST_RATIO = 1.25;
const HIST_LAST = 63;
/** A chat call's bucket i is stored as CHAT_BUCKETS + i, in the same histogram as tasks'. */
const CHAT_BUCKETS = 64;
/** A bucket's upper bound (ms): what a percentile in it is reported as, at most 25 % above the true value. */
const bucketUpperMs = (b: number): number => HIST_BASE_MS * HIST_RATIO ** b;
/** The bucket of a duration (ms): 0 below 10 ms, then 1 + ⌊log1.25(ms / 10)⌋, at most 63. */
const BUCKET_SQL = (ms: string) =>
  `CASE WHEN ${ms} IS NULL THEN NULL WHEN ${ms} < ${HIST_BASE_MS} THEN 0
        ELSE LEAST(${HIST_LAST}, 1 + floor(ln(${ms} / ${HIST_BASE_MS}.0) / ln(${HIST_RATIO}))::int) END`;

/** Tasks one rollup statement reads (along `tasks_settled_keyset_idx`). */
export const USAGE_ROLLUP_BATCH = 5000;
/**
 * A task is rolled up once it has been settled this long: its settle transaction read `now()` at its start and may
 * commit a little later; a task committed behind the watermark would never be counted. Settle statements are single,
 * short transactions (statement_timeout bounds them well below this).
 */
export const USAGE_ROLLUP_LAG_MS = 60_000;
/** How long one sweep keeps rolling up while its batches come back full (below the billing sweep's 15 s beat). */
const USAGE_SWEEP_BUDGET_MS = 5_000;
const USAGE_SWEEP_MAX_BATCHES = 200;

/** Dimensions usage can be grouped by. `day` and `hour` are UTC. */
export const USAGE_DIMENSIONS = ['account', 'key', 'model', 'channel', 'day', 'hour'] as const;
export type UsageDimension = (typeof USAGE_DIMENSIONS)[number];

interface UsageQuery {
  /** Inclusive, rounded down (usageRange). */
  from: Date;
  /** Exclusive, rounded up (usageRange). */
  to: Date;
  groupBy: readonly UsageDimension[];
  accountId?: string;
  apiKeyId?: string;
  model?: string;
  /** A channel id, or NO_CHANNEL for tasks no channel served. */
  channelId?: string;
}

export interface UsageGroup {
  account_id?: string;
  key_id?: string;
  model?: string;
  /** Null: tasks no channel served. */
  channel_id?: string | null;
  /** ISO date (`YYYY-MM-DD`) / hour start (ISO instant), UTC. */
  day?: string;
  hour?: string;
  tasks: number;
  task_failures: number;
  chat_calls: number;
  chat_failures: number;
  /** Minor units captured by the ledger. */
  spend: bigint;
  /** Duration percentiles (ms; a bucket's upper bound), null without calls of that kind. */
  task_p50_ms: number | null;
  task_p99_ms: number | null;
  chat_p50_ms: number | null;
  chat_p99_ms: number | null;
}

/** The q-quantile (0..1) of a sparse histogram, as its bucket's upper bound; null when empty. */
function histQuantile(hist: Record<string, number | string>, q: number): number | null {
  const entries = Object.entries(hist)
    .map(([b, n]) => [Number(b), Number(n)] as const)
    .filter(([, n]) => n > 0)
    .sort((a, b) => a[0] - b[0]);
  const total = entries.reduce((s, [, n]) => s + n, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const [b, n] of entries) {
    seen += n;
    if (seen >= rank) return Math.round(bucketUpperMs(b));
  }
  return Math.round(bucketUpperMs(entries[entries.length - 1][0]));
}

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const floorTo = (d: Date, unit: number): Date => new Date(Math.floor(d.getTime() / unit) * unit);
const ceilTo = (d: Date, unit: number): Date => new Date(Math.ceil(d.getTime() / unit) * unit);
/** Ranges up to this many days are read by the hour (and may be grouped by hour); longer ones by whole UTC days. */
export const USAGE_HOURLY_MAX_DAYS = 2;

/**
 * What a query over [from, to) covers: whole hours up to USAGE_HOURLY_MAX_DAYS, whole UTC days beyond (then only
 * `usage_daily` is read: its rows grow with the days and the combinations in use, never with the task count).
 */
export function usageRange(from: Date, to: Date): { from: Date; to: Date } {
  const unit = to.getTime() - from.getTime() > USAGE_HOURLY_MAX_DAYS * DAY_MS ? DAY_MS : HOUR_MS;
  return { from: floorTo(from, unit), to: ceilTo(to, unit) };
}

/** One rollup batch's upsert into a rollup table from the batch's per-bucket counts (`per_bucket` below). */
const rollupUpsert = (table: string, bucket: string) => `
  INSERT INTO ${table} (bucket, account_id, api_key_id, model, channel_id, tasks, task_failures, chat_calls, chat_failures, spend, ms)
  SELECT ${bucket}, account_id, api_key_id, model, channel_id,
         COALESCE(sum(n) FILTER (WHERE NOT chat), 0), COALESCE(sum(failed) FILTER (WHERE NOT chat), 0),
         COALESCE(sum(n) FILTER (WHERE chat), 0), COALESCE(sum(failed) FILTER (WHERE chat), 0), sum(spend),
         COALESCE(array_agg(((b + CASE WHEN chat THEN ${CHAT_BUCKETS} ELSE 0 END)::bigint << 32) | n ORDER BY chat, b) FILTER (WHERE b IS NOT NULL), '{}'::bigint[])
  FROM (SELECT ${bucket === 'hour' ? 'hour' : 'day'}, account_id, api_key_id, model, channel_id, chat, b,
               sum(n)::int AS n, sum(failed)::int AS failed, sum(spend) AS spend
        FROM per_bucket GROUP BY 1, 2, 3, 4, 5, 6, 7) pb
  GROUP BY 1, 2, 3, 4, 5
  ON CONFLICT (account_id, bucket, api_key_id, model, channel_id) DO UPDATE SET
    tasks = ${table}.tasks + EXCLUDED.tasks, task_failures = ${table}.task_failures + EXCLUDED.task_failures,
    chat_calls = ${table}.chat_calls + EXCLUDED.chat_calls, chat_failures = ${table}.chat_failures + EXCLUDED.chat_failures,
    spend = ${table}.spend + EXCLUDED.spend,
    ms = usage_hist_add(${table}.ms, EXCLUDED.ms)
  RETURNING 1`;

/**
 * One rollup batch ($1 lag ms, $2 limit, $3 and $4 the watermark: constants, so the row comparison is the index scan's
 * start, not a filter over every row already rolled up): the next settled tasks along tasks_settled_keyset_idx,
 * their captures (ledger_task_kind_unique), their counts and histograms added to their hour's and day's rows, the
 * watermark moved past them.
 */
const ROLLUP_SQL = `WITH src AS (
   SELECT t.id, t.settled_at, t.account_id, t.api_key_id, t.model, COALESCE(t.channel_id, '${NO_CHANNEL}'::uuid) AS channel_id,
          t.pool = 'chat' AS chat, (t.status = 'failed')::int AS failed,
          date_trunc('hour', t.created_at, 'UTC') AS hour,
          EXTRACT(EPOCH FROM t.completed_at - CASE WHEN t.pool = 'chat' THEN COALESCE(t.started_at, t.created_at) ELSE t.created_at END) * 1000 AS ms
   FROM tasks t
   WHERE t.settled_at IS NOT NULL AND (t.settled_at, t.id) > ($3::timestamptz, $4::text)
     AND t.settled_at <= now() - make_interval(secs => $1::double precision / 1000)
   ORDER BY t.settled_at, t.id
   LIMIT $2
 ), per_bucket AS (
   SELECT src.hour, date_trunc('day', src.hour, 'UTC') AS day, src.account_id, src.api_key_id, src.model, src.channel_id, src.chat,
          ${BUCKET_SQL('src.ms')} AS b, count(*) AS n, sum(src.failed) AS failed, COALESCE(sum(l.amount), 0)::bigint AS spend
   FROM src LEFT JOIN ledger_entries l ON l.task_id = src.id AND l.kind = 'capture'
   GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
 ), hourly AS (${rollupUpsert('usage_hourly', 'hour')}
 ), daily AS (${rollupUpsert('usage_daily', 'day')}
 ), last AS (
   SELECT settled_at, id FROM src ORDER BY settled_at DESC, id DESC LIMIT 1
 ), mark AS (
   UPDATE usage_rollup_state s SET settled_at = last.settled_at, task_id = last.id, updated_at = now() FROM last WHERE s.id = 1 RETURNING 1
 )
 SELECT (SELECT count(*) FROM src)::int AS n, (SELECT count(*) FROM hourly)::int AS h, (SELECT count(*) FROM daily)::int AS d,
        (SELECT count(*) FROM mark)::int AS marked`;

/** Thrown to roll back an explained (so executed) rollup batch. */
class ExplainDone extends Error {
  constructor(readonly plan: string) {
    super('explained');
  }
}

/** Each dimension: its SQL over the rollup rows `r` and its output column. */
const DIM_SQL: Record<UsageDimension, { expr: string; col: string }> = {
  account: { expr: 'r.account_id', col: 'account_id' },
  key: { expr: 'r.api_key_id', col: 'key_id' },
  model: { expr: 'r.model', col: 'model' },
  channel: { expr: 'r.channel_id', col: 'channel_id' },
  day: { expr: `date_trunc('day', r.bucket, 'UTC')`, col: 'day' },
  hour: { expr: 'r.bucket', col: 'hour' },
};

/**
 * Usage (docs/management-api.md, "Usage"): a rollup of settled tasks and chat calls per UTC hour and day, written by
 * a bounded, idempotent job with a watermark (`rollup`, on the billing sweep's beat), read by `report` — which never
 * touches `tasks` or `ledger_entries`, so its cost depends on the rollup rows of the range, not on the task count.
 */
export class UsageRepository {
  constructor(private readonly ds: Pick<DataSource, 'query' | 'transaction'>) {}

  /**
   * Rolls up the next `limit` settled tasks past the watermark (settled at least `lagMs` ago), in (settled_at, id)
   * order: their counts, failures, durations and captured spend are added to their hour's and day's rows, and the
   * watermark moves past them, in one transaction. Idempotent: a batch is counted once (the watermark moves with it);
   * one replica at a time (the watermark row is locked, SKIP LOCKED: another replica's call returns 0 at once).
   * Returns how many tasks it rolled up.
   */
  async rollup(opts: { limit?: number; lagMs?: number } = {}): Promise<number> {
    const limit = opts.limit ?? USAGE_ROLLUP_BATCH;
    const lagMs = opts.lagMs ?? USAGE_ROLLUP_LAG_MS;
    return this.ds.transaction(async (m: EntityManager) => {
      const [w] = rowsOf(await m.query(`SELECT settled_at::text AS at, task_id FROM usage_rollup_state WHERE id = 1 FOR UPDATE SKIP LOCKED`));
      if (!w) return 0;
      // a statement of its own, after the lock: its snapshot sees every task settled before the watermark's holder committed
      const rows = rowsOf(await m.query(ROLLUP_SQL, [lagMs, limit, w.at, w.task_id]));
      return Number(rows[0]?.n ?? 0);
    });
  }

  /** Rolls up batch after batch while they come back full, for at most `budgetMs`; returns how many tasks. */
  async sweep(opts: { budgetMs?: number; limit?: number; lagMs?: number } = {}): Promise<number> {
    const limit = opts.limit ?? USAGE_ROLLUP_BATCH;
    const until = Date.now() + (opts.budgetMs ?? USAGE_SWEEP_BUDGET_MS);
    let total = 0;
    for (let i = 0; i < USAGE_SWEEP_MAX_BATCHES; i++) {
      const n = await this.rollup({ limit, lagMs: opts.lagMs });
      total += n;
      if (n < limit || Date.now() >= until) break;
    }
    return total;
  }

  /** The plan of one rollup batch, executed and rolled back (the bench's check that it stays on its indexes). */
  async explainRollup(limit = USAGE_ROLLUP_BATCH): Promise<string> {
    return this.ds
      .transaction(async (m: EntityManager) => {
        const [w] = rowsOf(await m.query(`SELECT settled_at::text AS at, task_id FROM usage_rollup_state WHERE id = 1 FOR UPDATE`));
        const rows: Row[] = await m.query(`EXPLAIN (ANALYZE, BUFFERS) ${ROLLUP_SQL}`, [0, limit, w.at, w.task_id]);
        throw new ExplainDone(rows.map((r) => String(r['QUERY PLAN'])).join('\n'));
      })
      .catch((e: unknown) => {
        if (e instanceof ExplainDone) return e.plan;
        throw e;
      });
  }

  /** The watermark: tasks settled up to here are in the rollup (null: none yet). */
  async rolledUpTo(): Promise<Date | null> {
    const rows: Row[] = await this.ds.query(`SELECT settled_at FROM usage_rollup_state WHERE id = 1 AND settled_at > '-infinity'`);
    return rows[0] ? new Date(rows[0].settled_at as string) : null;
  }

  /**
   * Usage of [from, to) grouped by the given dimensions. Whole UTC days inside the range come from `usage_daily`,
   * the hours at its edges (and every hour when grouping by hour) from `usage_hourly`: the rows read are bounded by
   * (days + 48 hours) × the (account, key, model, channel) combinations active then, whatever the task count.
   * `explain` returns the plan instead (the bench's check that it stays on the rollup's indexes).
   */
  async report(q: UsageQuery): Promise<UsageGroup[]> {
    const { sql, params } = this.sql(q);
    const rows: Row[] = await this.ds.query(sql, params);
    return rows.map((r) => this.toGroup(q.groupBy, r));
  }

  async explain(q: UsageQuery): Promise<string> {
    const { sql, params } = this.sql(q);
    const rows: Row[] = await this.ds.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, params);
    return rows.map((r) => String(r['QUERY PLAN'])).join('\n');
  }

  private sql(q: UsageQuery): { sql: string; params: unknown[] } {
    const { from, to } = usageRange(q.from, q.to);
    const params: unknown[] = [];
    const p = (v: unknown): string => `$${params.push(v)}`;
    const filters: string[] = [];
    if (q.accountId !== undefined) filters.push(`account_id = ${p(q.accountId)}`);
    if (q.apiKeyId !== undefined) filters.push(`api_key_id = ${p(q.apiKeyId)}`);
    if (q.model !== undefined) filters.push(`model = ${p(q.model)}`);
    if (q.channelId !== undefined) filters.push(`channel_id = ${p(q.channelId)}`);
    const where = filters.map((f) => ` AND ${f}`).join('');
    const cols = 'bucket, account_id, api_key_id, model, channel_id, tasks, task_failures, chat_calls, chat_failures, spend, ms';
    const part = (table: string, lo: Date, hi: Date) => `SELECT ${cols} FROM ${table} WHERE bucket >= ${p(lo)} AND bucket < ${p(hi)}${where}`;
    // whole days from the daily rollup, the hours at the edges from the hourly one
    const d1 = ceilTo(from, DAY_MS);
    const d2 = floorTo(to, DAY_MS);
    const parts: string[] = [];
    if (q.groupBy.includes('hour') || d1 >= d2) parts.push(part('usage_hourly', from, to));
    else {
      parts.push(part('usage_daily', d1, d2));
      if (from < d1) parts.push(part('usage_hourly', from, d1));
      if (d2 < to) parts.push(part('usage_hourly', d2, to));
    }
    const source = parts.join(' UNION ALL ');
    if (q.groupBy.length === 0) throw new Error('usage is grouped by at least one dimension');
    const dims = q.groupBy.map((d) => DIM_SQL[d]);
    const keys = dims.map((d) => d.col).join(', ');
    const sql = `
      WITH r AS MATERIALIZED (
        SELECT ${dims.map((d) => `${d.expr} AS ${d.col}`).join(', ')}, r.tasks, r.task_failures, r.chat_calls, r.chat_failures, r.spend, r.ms
        FROM (${source}) r
      ), tot AS (
        SELECT ${keys}, sum(tasks)::bigint AS tasks, sum(task_failures)::bigint AS task_failures, sum(chat_calls)::bigint AS chat_calls,
               sum(chat_failures)::bigint AS chat_failures, sum(spend)::bigint AS spend
        FROM r GROUP BY ${keys}
      ), h AS (
        SELECT ${keys}, array_agg(b ORDER BY b) AS b, array_agg(n ORDER BY b) AS n FROM (
          SELECT ${keys}, e.v >> 32 AS b, sum(e.v & 4294967295) AS n FROM r, unnest(r.ms) AS e(v) GROUP BY ${keys}, e.v >> 32) x
        GROUP BY ${keys}
      )
      SELECT tot.*, h.b::int[] AS hist_b, h.n::text[] AS hist_n
      FROM tot LEFT JOIN h USING (${keys})
      ORDER BY ${keys}`;
    return { sql, params };
  }

  private toGroup(groupBy: readonly UsageDimension[], r: Row): UsageGroup {
    const g: UsageGroup = {
      tasks: Number(r.tasks),
      task_failures: Number(r.task_failures),
      chat_calls: Number(r.chat_calls),
      chat_failures: Number(r.chat_failures),
      spend: BigInt(r.spend as string),
      task_p50_ms: null,
      task_p99_ms: null,
      chat_p50_ms: null,
      chat_p99_ms: null,
    };
    for (const d of groupBy) {
      const v = r[DIM_SQL[d].col];
      if (d === 'day') g.day = new Date(v as string).toISOString().slice(0, 10);
      else if (d === 'hour') g.hour = new Date(v as string).toISOString();
      else if (d === 'channel') g.channel_id = v === NO_CHANNEL ? null : (v as string);
      else if (d === 'account') g.account_id = v as string;
      else if (d === 'key') g.key_id = v as string;
      else g.model = v as string;
    }
    // one histogram: a task's buckets below CHAT_BUCKETS, a chat call's from it
    const th: Record<string, number> = {};
    const ch: Record<string, number> = {};
    ((r.hist_b as number[] | null) ?? []).forEach((b, i) => {
      const n = Number((r.hist_n as string[])[i]);
      if (b < CHAT_BUCKETS) th[b] = n;
      else ch[b - CHAT_BUCKETS] = n;
    });
    g.task_p50_ms = histQuantile(th, 0.5);
    g.task_p99_ms = histQuantile(th, 0.99);
    g.chat_p50_ms = histQuantile(ch, 0.5);
    g.chat_p99_ms = histQuantile(ch, 0.99);
    return g;
  }
}
