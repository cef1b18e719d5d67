/**
 * Every query a service runs on a timer (sweeps, retention, gauges, probes, lease upkeep), each through its own
 * repository call, and the machinery that EXPLAINs them (scripts/explain-volume.ts). `file` is the service file that
 * makes the call; callerOf finds the line (test/infra/periodic-queries.int.test.ts checks that every file still calls
 * its method).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { DataSource, QueryRunner } from 'typeorm';
import {
  ChannelHealthRepository,
  ConsoleListRepository,
  ChatCallRepository,
  CreditLeaseRepository,
  OpsStatsRepository,
  RetentionRepository,
  TaskRecoveryRepository,
  TaskRepository,
  WebhookRepository,
  pingDatabase,
  LIST_SCAN_BUDGET,
  type TaskListFilter,
} from '@gmg/db';

const REPO_ROOT = path.resolve(__dirname, '../..');

/** What the bounds are measured against, read from the database before the plans. */
export interface Backlog {
  /** Open tasks (pending, processing). */
  open: number;
  /** Terminal tasks without capture or release. */
  unsettled: number;
  /** Tasks still bound to an Idempotency-Key. */
  keyed: number;
  /** Active credit leases. */
  activeLeases: number;
  /** Rows per table (pg_class estimates). */
  rows: Record<string, number>;
}

export interface PeriodicQuery {
  label: string;
  /** The service file that makes the call (its line is found by callerOf, so an edit above it breaks nothing). */
  file: string;
  /** The repository method or function the call names (`<method>(` in that file). */
  method: string;
  /** How often it runs, as configured by default. */
  every: string;
  run(ds: DataSource, pick: Picks): Promise<unknown>;
  /**
   * The most rows one run may touch and still be bounded: what the query is allowed to grow with (its page or batch,
   * the open or unsettled backlog, the small tables), never the size of `tasks` or `ledger_entries`.
   */
  bound(b: Backlog): number;
}

/** Real ids the calls need (a lease to close, calls to journal), read from the database. */
export interface Picks {
  openTask: string;
  expiredLease?: string;
  activeLeases: string[];
  overdueChatCall?: string;
  runningChatCalls: string[];
  /** The console lists' filters (consoleQueries): the busiest account and key, a busy channel, a model, a task. */
  console: { account: string; key: string; channel: string; model: string; task: string };
}

const PAGE = 500; // forEachIdPage's page (libs/tasks/src/sweep-pages.ts)
const SLACK = 1000; // index pages, the small tables a plan joins, a few rows either side

/** `file:line` of the first line in the query's file that calls its method; `file:0` when none does. */
export function callerOf(q: Pick<PeriodicQuery, 'file' | 'method'>): string {
  const call = new RegExp(`(?:^|[^\\w$])${q.method}\\(`);
  const lines = readFileSync(path.join(REPO_ROOT, q.file), 'utf8').split('\n');
  return `${q.file}:${lines.findIndex((l) => call.test(l)) + 1}`;
}

export function periodicQueries(): PeriodicQuery[] {
  const recovery = (ds: DataSource) => new TaskRecoveryRepository(ds);
  return [
    {
      label: 'pool sweep: overdue open tasks, one page (timeout)',
      file: 'libs/tasks/src/pool-sweeper.ts',
      method: 'overdueIds',
      every: 'SWEEP_INTERVAL_MS 15 s, per pool',
      run: (ds) => recovery(ds).overdueIds('image', PAGE),
      bound: (b) => b.open + SLACK,
    },
    {
      label: 'pool sweep: open tasks untouched 60 s, one page (orphan walk)',
      file: 'libs/tasks/src/pool-sweeper.ts',
      method: 'openIds',
      every: 'SWEEP_INTERVAL_MS 15 s, per pool',
      run: (ds) => recovery(ds).openIds('image', 60_000, PAGE),
      bound: (b) => b.open + SLACK,
    },
    {
      label: 'pool sweep: every open task, one page (rebuild after a Redis loss)',
      file: 'libs/tasks/src/pool-sweeper.ts',
      method: 'openIds',
      every: 'once per lost shard',
      run: (ds) => recovery(ds).openIds('video', 0, PAGE),
      bound: (b) => b.open + SLACK,
    },
    {
      label: 'pool sweep: one task read by id (rebuild)',
      file: 'libs/tasks/src/pool-sweeper.ts',
      method: 'get',
      every: 'per open task on a rebuild',
      run: (ds, p) => new TaskRepository(ds).get(p.openTask),
      bound: () => SLACK,
    },
    {
      label: 'billing sweep: unsettled terminal tasks, one page',
      file: 'services/billing/src/billing-sweeper.ts',
      method: 'unsettledIds',
      every: 'SWEEP_INTERVAL_MS 15 s',
      run: (ds) => recovery(ds).unsettledIds(30_000, PAGE),
      bound: (b) => b.unsettled + SLACK,
    },
    {
      label: 'billing sweep: owed webhooks of the last 10 min, one page',
      file: 'services/billing/src/billing-sweeper.ts',
      method: 'owedIds',
      every: 'SWEEP_INTERVAL_MS 15 s',
      run: (ds) => new WebhookRepository(ds).owedIds(30_000, 10 * 60_000, PAGE),
      // tasks ended in the window (10 min of traffic) and one delivery lookup each
      bound: () => 20 * PAGE + SLACK,
    },
    {
      label: 'billing sweep: owed webhooks of the last 24 h, one page (rebuild after a Redis loss)',
      file: 'services/billing/src/billing-sweeper.ts',
      method: 'owedIds',
      every: 'once per Redis loss',
      run: (ds) => new WebhookRepository(ds).owedIds(0, 24 * 3600_000, PAGE),
      bound: () => 20 * PAGE + SLACK,
    },
    {
      label: 'billing sweep: Idempotency-Keys past 24 h, one batch of 5,000',
      file: 'services/billing/src/billing-sweeper.ts',
      method: 'expireIdempotencyKeys',
      every: 'SWEEP_INTERVAL_MS 15 s, ≤ 10 batches',
      run: (ds) => new TaskRepository(ds).expireIdempotencyKeys(undefined, 5000),
      bound: () => 3 * 5000 + SLACK,
    },
    {
      label: 'retention: archive a batch of 1,000 ended tasks and their ledger entries',
      file: 'services/billing/src/billing-worker.ts',
      method: 'sweep',
      every: 'SWEEP_INTERVAL_MS 15 s, ≤ 10 s of batches',
      run: (ds) => new RetentionRepository(ds).archiveTasks(30),
      // 1,000 tasks, their ~2,000 entries, the archive rows and the append-only trigger's lookups
      bound: () => 12 * 1000 + SLACK,
    },
    {
      label: "retention: archive a batch of 1,000 top-ups and closed leases' entries",
      file: 'services/billing/src/billing-worker.ts',
      method: 'sweep',
      every: 'SWEEP_INTERVAL_MS 15 s, ≤ 10 s of batches',
      run: (ds) => new RetentionRepository(ds).archiveLedger(30),
      // 1,000 picked entries, a lease lookup for each, the copies and the deletes with the trigger's lookups
      bound: () => 6 * 1000 + SLACK,
    },
    {
      label: 'retention: prune a batch of 1,000 webhook delivery records',
      file: 'services/billing/src/billing-worker.ts',
      method: 'sweep',
      every: 'SWEEP_INTERVAL_MS 15 s, ≤ 10 s of batches',
      run: (ds) => new RetentionRepository(ds).pruneWebhookDeliveries(30),
      bound: () => 4 * 1000 + SLACK,
    },
    {
      label: 'metrics: unsettled backlog and ledger totals (gmg_unsettled_*, gmg_ledger_units)',
      file: 'services/billing/src/main.ts',
      method: 'money',
      every: 'each scrape, cached 15 s',
      run: (ds) => new OpsStatsRepository(ds).money(),
      bound: (b) => b.unsettled + SLACK,
    },
    {
      label: 'metrics: channel and key health (gmg_channel_health)',
      file: 'libs/tasks/src/pool-worker.ts',
      method: 'snapshot',
      every: 'each scrape, per pool worker',
      run: (ds) => new ChannelHealthRepository(ds).snapshot(),
      bound: (b) => (b.rows.channels ?? 0) + (b.rows.channel_keys ?? 0) + SLACK,
    },
    {
      label: 'channel probe: claim one due trial',
      file: 'libs/tasks/src/channel-probe.ts',
      method: 'claimDue',
      every: 'CHANNEL_PROBE_INTERVAL_MS, per pool worker',
      run: (ds) => new ChannelHealthRepository(ds).claimDue(30_000),
      bound: (b) => (b.rows.channels ?? 0) + (b.rows.channel_keys ?? 0) + SLACK,
    },
    {
      label: 'chat sweeper: expired credit leases',
      file: 'services/api-edge/src/messages/chat-call.sweeper.ts',
      method: 'findExpired',
      every: 'chat sweep interval, per edge',
      run: (ds) => new CreditLeaseRepository(ds).findExpired(),
      bound: (b) => b.activeLeases + SLACK,
    },
    {
      label: 'chat sweeper: close one expired lease (its open calls charged)',
      file: 'services/api-edge/src/messages/chat-call.sweeper.ts',
      method: 'close',
      every: 'per expired lease',
      run: (ds, p) => (p.expiredLease ? new CreditLeaseRepository(ds).close(p.expiredLease) : Promise.resolve(null)),
      bound: () => SLACK,
    },
    {
      label: 'chat sweeper: abandoned chat calls past their deadline',
      file: 'services/api-edge/src/messages/chat-call.sweeper.ts',
      method: 'findOverdue',
      every: 'chat sweep interval, per edge',
      run: (ds) => new ChatCallRepository(ds).findOverdue(),
      bound: (b) => b.open + SLACK,
    },
    {
      label: 'chat sweeper: settle one abandoned call',
      file: 'services/api-edge/src/messages/chat-call.sweeper.ts',
      method: 'settle',
      every: 'per abandoned call',
      run: (ds, p) =>
        p.overdueChatCall
          ? new ChatCallRepository(ds).settle(p.overdueChatCall, {
              status: 'failed',
              cost: 0n,
              result: { charge_rule: 'abandoned' },
              error: null,
              channelId: null,
            })
          : Promise.resolve(false),
      bound: () => SLACK,
    },
    {
      label: 'credit leases: renew the edge’s active leases',
      file: 'services/api-edge/src/messages/credit-lease.book.ts',
      method: 'renew',
      every: 'a third of the lease TTL, per edge',
      run: (ds, p) => new CreditLeaseRepository(ds).renew(p.activeLeases, 30_000),
      bound: (b) => b.activeLeases + SLACK,
    },
    {
      label: 'credit leases (task holds): renew',
      file: 'libs/db/src/repositories/task-lease.book.ts',
      method: 'renew',
      every: 'a third of the lease TTL, per edge',
      run: (ds, p) => new CreditLeaseRepository(ds).renew(p.activeLeases, 30_000),
      bound: (b) => b.activeLeases + SLACK,
    },
    {
      label: 'chat journal: cost so far of running calls',
      file: 'services/api-edge/src/messages/credit-lease.book.ts',
      method: 'journal',
      every: '1 s per edge with streaming calls',
      run: (ds, p) => new CreditLeaseRepository(ds).journal(p.runningChatCalls.map((id) => ({ id, costSoFar: 123n }))),
      bound: () => SLACK,
    },
    {
      label: 'readiness: Postgres ping',
      file: 'services/billing/src/main.ts',
      method: 'pingDatabase',
      every: 'each probe',
      run: (ds) => pingDatabase(ds),
      bound: () => 1,
    },
  ];
}

const CONSOLE_PAGE = 20;
/** A console list's walk reads at most its scan budget, then the page's rows again by id (and one edge row). */
const consoleBound = (): number => LIST_SCAN_BUDGET + 2 * (CONSOLE_PAGE + 2) + SLACK;

/**
 * The console's lists (GET /api/tasks, GET /api/accounts; docs/management-api.md, "Console routes"): not on a timer
 * but on every page an operator opens, so proven the same way. Each is one page of 20 under the filters named; the
 * rare combinations are the worst case (the walk reads its whole budget and finds little).
 */
export function consoleQueries(): PeriodicQuery[] {
  const file = 'services/api-edge/src/management/console.service.ts';
  const every = 'each console page (GET /api/tasks, /api/accounts)';
  const tasks = (ds: DataSource, f: Omit<TaskListFilter, 'limit'>) => new ConsoleListRepository(ds).tasks({ ...f, limit: CONSOLE_PAGE });
  const hourAgo = () => Math.floor(Date.now() / 1000) - 3600;
  return [
    { label: 'console: all tasks, newest page', file, method: 'tasks', every, run: (ds) => tasks(ds, {}), bound: consoleBound },
    {
      label: 'console: all tasks, a page deep in the past (cursor 30 days back)',
      file,
      method: 'tasks',
      every,
      run: (ds) => tasks(ds, { before: { ts: new Date(Date.now() - 30 * 86_400_000).toISOString(), id: 'task_zzzzzzzzz' } }),
      bound: consoleBound,
    },
    {
      label: "console: the busiest account's tasks",
      file,
      method: 'tasks',
      every,
      run: (ds, p) => tasks(ds, { accountId: p.console.account }),
      bound: consoleBound,
    },
    {
      label: "console: the busiest account's failed tasks of one model in the last day",
      file,
      method: 'tasks',
      every,
      run: (ds, p) => tasks(ds, { accountId: p.console.account, status: 'failed', model: p.console.model, from: hourAgo() - 23 * 3600 }),
      bound: consoleBound,
    },
    { label: "console: the busiest key's tasks", file, method: 'tasks', every, run: (ds, p) => tasks(ds, { apiKeyId: p.console.key }), bound: consoleBound },
    {
      label: "console: one channel's failed video tasks (no index of their own: one budget walk)",
      file,
      method: 'tasks',
      every,
      run: (ds, p) => tasks(ds, { channelId: p.console.channel, status: 'failed', pool: 'video' }),
      bound: consoleBound,
    },
    {
      label: 'console: one model, processing, last hour (no index of their own)',
      file,
      method: 'tasks',
      every,
      run: (ds, p) => tasks(ds, { model: p.console.model, status: 'processing', from: hourAgo() }),
      bound: consoleBound,
    },
    {
      label: 'console: account search by a part of the name',
      file,
      method: 'accounts',
      every,
      run: (ds) => new ConsoleListRepository(ds).accounts({ nameContains: 'acme', limit: CONSOLE_PAGE }),
      bound: consoleBound,
    },
    {
      label: "console: a task's detail (row, ledger rows, prompt)",
      file,
      method: 'entriesOfTask',
      every: 'each task page of the console',
      run: async (ds, p) => {
        const t = await new TaskRepository(ds).get(p.console.task);
        const lists = new ConsoleListRepository(ds);
        return Promise.all([lists.entriesOfTask(t?.accountId ?? p.console.account, p.console.task), lists.promptOf(p.console.task, 2001)]);
      },
      bound: () => SLACK,
    },
  ];
}

export interface ScanNode {
  node: string;
  relation?: string;
  index?: string;
  /** Rows out plus rows the node read and threw away (filter, recheck), times its loops. */
  touched: number;
}

export interface Explained {
  label: string;
  caller: string;
  statements: number;
  /** Sum over the run's statements. */
  rowsTouched: number;
  sharedBuffers: number;
  ms: number;
  bound: number;
  scans: ScanNode[];
  verdict: 'bounded' | 'unbounded';
  why: string[];
  plans: string[];
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  'Rows Removed by Join Filter'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

const SCAN = /^(Seq Scan|Index Scan|Index Only Scan|Bitmap Heap Scan|Tid Scan|Tid Range Scan)$/;

/** The scan nodes of a plan and how many rows each touched (the bitmap's index half is counted by its heap half). */
export function scansOf(plan: PlanNode): ScanNode[] {
  const out: ScanNode[] = [];
  const walk = (n: PlanNode): void => {
    if (SCAN.test(n['Node Type'])) {
      const loops = n['Actual Loops'] ?? 1;
      const touched = ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) * loops;
      out.push({ node: n['Node Type'], relation: n['Relation Name'], index: n['Index Name'], touched });
    }
    for (const c of n.Plans ?? []) walk(c);
  };
  walk(plan);
  return out;
}

/** A table is large past this many rows: a sequential scan of it is unbounded. */
export const LARGE_TABLE_ROWS = 100_000;

/** Why a run is unbounded (empty: bounded). */
export function judge(scans: ScanNode[], rowsTouched: number, bound: number, rows: Record<string, number>): string[] {
  const why: string[] = [];
  for (const s of scans) {
    if (s.node === 'Seq Scan' && s.relation && (rows[s.relation] ?? 0) > LARGE_TABLE_ROWS)
      why.push(`Seq Scan on ${s.relation} (${Math.round(rows[s.relation]!).toLocaleString('en-US')} rows)`);
  }
  if (rowsTouched > bound) why.push(`${rowsTouched.toLocaleString('en-US')} rows touched > bound ${bound.toLocaleString('en-US')}`);
  return why;
}

/**
 * A data source whose every statement is first run under EXPLAIN (ANALYZE, BUFFERS) at a savepoint that is then
 * rolled back, and then run for real so the repository gets its rows and goes on (a retention batch's later
 * statements see the ids its first one moved). Everything happens in one transaction the caller rolls back.
 */
function explaining(qr: QueryRunner, plans: Array<{ sql: string; plan: PlanNode; ms: number }>): DataSource {
  const query = async (sql: string, params: unknown[] = []): Promise<unknown> => {
    await qr.query('SAVEPOINT explain_one');
    const [row] = (await qr.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, params)) as Array<{ 'QUERY PLAN': Array<Record<string, unknown>> }>;
    await qr.query('ROLLBACK TO SAVEPOINT explain_one');
    const top = row!['QUERY PLAN'][0]!;
    plans.push({ sql, plan: top.Plan as PlanNode, ms: Number(top['Execution Time'] ?? 0) });
    return qr.query(sql, params);
  };
  const transaction = async <T>(a: unknown, b?: unknown): Promise<T> => {
    const run = (typeof a === 'function' ? a : b) as (m: { query: typeof query }) => Promise<T>;
    return run({ query });
  };
  return { query, transaction, createQueryRunner: () => qr } as unknown as DataSource;
}

async function backlogOf(ds: DataSource): Promise<Backlog> {
  const [b] = (await ds.query(
    `SELECT (SELECT count(*) FROM tasks WHERE status IN ('pending','processing'))::int AS open,
            (SELECT count(*) FROM tasks WHERE settled_at IS NULL AND status IN ('completed','failed'))::int AS unsettled,
            (SELECT count(*) FROM tasks WHERE idempotency_key IS NOT NULL)::int AS keyed,
            (SELECT count(*) FROM credit_leases WHERE status = 'active')::int AS leases`,
  )) as Array<Record<string, number>>;
  const rel = (await ds.query(
    `SELECT relname, GREATEST(reltuples, 0)::float8 AS n FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace`,
  )) as Array<{ relname: string; n: number }>;
  return {
    open: Number(b!.open),
    unsettled: Number(b!.unsettled),
    keyed: Number(b!.keyed),
    activeLeases: Number(b!.leases),
    rows: Object.fromEntries(rel.map((r) => [r.relname, Number(r.n)])),
  };
}

/**
 * The worst cases of the console's filters: the busiest account and its busiest key (a planner that read all their
 * tasks and sorted would show here), the busiest channel of the last few thousand tasks, a model, the newest task.
 */
async function consolePicks(ds: DataSource): Promise<Picks['console']> {
  const one = async (sql: string): Promise<Record<string, string> | undefined> => ((await ds.query(sql)) as Array<Record<string, string>>)[0];
  const busiest = await one(`SELECT account_id, api_key_id FROM tasks GROUP BY account_id, api_key_id ORDER BY count(*) DESC LIMIT 1`);
  const newest = await one(`SELECT id, model FROM tasks ORDER BY created_at DESC, id DESC LIMIT 1`);
  const channel = await one(
    `SELECT channel_id FROM (SELECT channel_id FROM tasks ORDER BY created_at DESC, id DESC LIMIT 5000) w WHERE channel_id IS NOT NULL
      GROUP BY channel_id ORDER BY count(*) DESC LIMIT 1`,
  );
  const none = '00000000-0000-4000-8000-000000000000';
  return {
    account: busiest?.account_id ?? none,
    key: busiest?.api_key_id ?? none,
    channel: channel?.channel_id ?? none,
    model: newest?.model ?? 'none',
    task: newest?.id ?? 'task_none',
  };
}

async function picksOf(ds: DataSource): Promise<Picks> {
  const ids = async (sql: string): Promise<string[]> => ((await ds.query(sql)) as Array<{ id: string }>).map((r) => r.id);
  return {
    openTask: (await ids(`SELECT id FROM tasks WHERE status = 'processing' ORDER BY id DESC LIMIT 1`))[0] ?? 'task_none',
    expiredLease: (await ids(`SELECT id FROM credit_leases WHERE status = 'active' AND expires_at < now() ORDER BY expires_at LIMIT 1`))[0],
    activeLeases: await ids(`SELECT id FROM credit_leases WHERE status = 'active' ORDER BY id LIMIT 50`),
    overdueChatCall: (
      await ids(`SELECT id FROM tasks WHERE pool = 'chat' AND lease_id IS NULL AND status IN ('pending','processing') AND deadline_at < now() LIMIT 1`)
    )[0],
    runningChatCalls: await ids(`SELECT id FROM tasks WHERE pool = 'chat' AND status IN ('pending','processing') ORDER BY id LIMIT 100`),
    console: await consolePicks(ds),
  };
}

/** Runs each query's call under EXPLAIN in its own rolled-back transaction; the database is left as it was. */
export async function explainAll(ds: DataSource, queries: PeriodicQuery[]): Promise<{ backlog: Backlog; results: Explained[] }> {
  const backlog = await backlogOf(ds);
  const picks = await picksOf(ds);
  const results: Explained[] = [];
  for (const q of queries) {
    const qr = ds.createQueryRunner();
    await qr.connect();
    const plans: Array<{ sql: string; plan: PlanNode; ms: number }> = [];
    try {
      await qr.query('BEGIN');
      await qr.query(`SET LOCAL statement_timeout = '120s'`);
      await q.run(explaining(qr, plans), picks);
    } finally {
      await qr.query('ROLLBACK').catch(() => undefined);
      await qr.release();
    }
    const scans = plans.flatMap((p) => scansOf(p.plan));
    const rowsTouched = scans.reduce((s, n) => s + n.touched, 0);
    const buffers = (n: PlanNode): number => (n['Shared Hit Blocks'] ?? 0) + (n['Shared Read Blocks'] ?? 0);
    const bound = q.bound(backlog);
    const why = judge(scans, rowsTouched, bound, backlog.rows);
    results.push({
      label: q.label,
      caller: callerOf(q),
      statements: plans.length,
      rowsTouched,
      sharedBuffers: plans.reduce((s, p) => s + buffers(p.plan), 0),
      ms: plans.reduce((s, p) => s + p.ms, 0),
      bound,
      scans,
      verdict: why.length ? 'unbounded' : 'bounded',
      why,
      plans: plans.map((p) => p.sql.replace(/\s+/g, ' ').trim()),
    });
  }
  return { backlog, results };
}

/** The table docs/benchmarks.md quotes, and each unbounded plan's reasons. */
export function formatTable(results: Explained[]): string {
  const lines = [
    '| periodic query | called at | statements | rows touched | bound | buffers | ms | verdict |',
    '|---|---|---:|---:|---:|---:|---:|---|',
    ...results.map(
      (r) =>
        `| ${r.label} | \`${r.caller}\` | ${r.statements} | ${r.rowsTouched.toLocaleString('en-US')} | ${r.bound.toLocaleString('en-US')} | ${r.sharedBuffers.toLocaleString('en-US')} | ${r.ms.toFixed(1)} | ${r.verdict === 'bounded' ? 'bounded' : `**unbounded**: ${r.why.join('; ')}`} |`,
    ),
  ];
  return lines.join('\n');
}
