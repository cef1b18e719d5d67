/**
 * The end of the run: waits (bounded) until the fleet has finished everything it accepted, then checks, from
 * Postgres and from what the clients saw:
 * - every task the edges accepted is in the database and terminal (none lost);
 * - every task is settled exactly once: one `hold`, at most one `capture` and at most one `release`, at least one of
 *   the two (a partial capture of an avatar batch is a capture plus the release of the rest); every chat call
 *   (pool `chat`) has exactly one capture; no task has two captures (double-settled);
 * - every ledger invariant (checkLedger: per account `available + held = topups − captures` and nothing stranded,
 *   one hold per task, each settlement summing to its hold, the in-flight counters, the leases; docs/architecture.md);
 * - every task submitted with a callback_url got its webhook (at least once; duplicates counted separately).
 */
import { Client } from 'pg';
import { checkLedger, waitFor } from '@gmg/testing';
import type { Driver } from './driver';
import type { WebhookReceiver } from './webhook-receiver';

export interface Verdict {
  accepted: number;
  inDatabase: number;
  open: number;
  missing: number;
  unsettled: number;
  doubleSettled: number;
  completed: number;
  /** Failed, not counting the calibration's cancelled tasks. */
  failed: number;
  cancelled: number;
  chatCalls: number;
  chatAnswered: number;
  /** Chat calls whose answer never reached the client (timeout or cut connection). */
  chatUnanswered: number;
  chatBad: number;
  accountsChecked: number;
  /** The ledger invariants broken at the end (checkLedger), as `name: count (e.g. id)`. */
  ledger: string[];
  heldAtEnd: string;
  webhooksExpected: number;
  webhooksMissing: number;
  webhookDuplicates: number;
  drainMs: number;
}

const TASKS_SQL = `
  SELECT count(*)::int AS n,
         count(*) FILTER (WHERE t.status NOT IN ('completed','failed'))::int AS open,
         count(*) FILTER (WHERE t.status = 'completed')::int AS completed,
         count(*) FILTER (WHERE t.status = 'failed' AND COALESCE(t.error->>'type', '') <> 'cancelled')::int AS failed,
         count(*) FILTER (WHERE t.status = 'failed' AND t.error->>'type' = 'cancelled')::int AS cancelled,
         count(*) FILTER (WHERE l.holds <> 1 OR l.captures > 1 OR l.releases > 1 OR l.captures + l.releases = 0
                           OR (t.status = 'failed' AND l.captures > 0))::int AS unsettled,
         count(*) FILTER (WHERE l.captures > 1 OR (t.status = 'failed' AND l.captures > 0))::int AS double
    FROM tasks t
    CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE kind = 'hold') AS holds,
                               count(*) FILTER (WHERE kind = 'capture') AS captures,
                               count(*) FILTER (WHERE kind = 'release') AS releases
                          FROM ledger_entries WHERE task_id = t.id) l
   WHERE t.pool <> 'chat'`;

const CHAT_SQL = `
  SELECT count(*)::int AS n,
         count(*) FILTER (WHERE (SELECT count(*) FROM ledger_entries l WHERE l.task_id = t.id AND l.kind = 'capture') <> 1)::int AS bad
    FROM tasks t WHERE t.pool = 'chat'`;

const ACCOUNTS_SQL = `SELECT count(*)::int AS n, COALESCE(sum(held), 0)::text AS held FROM accounts`;

/** Runs `work` on a client of its own (closed after). */
async function withClient<T>(url: string, work: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: url, application_name: 'gmg-fleet-checks' });
  await c.connect();
  try {
    return await work(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

const query = <T>(url: string, sql: string, params: unknown[] = []): Promise<T> => withClient(url, async (c) => (await c.query(sql, params)).rows[0] as T);

/** The ledger invariants that hold at any moment (a kill -9 included); open and unsettled tasks are counted above. */
const ledgerViolations = (url: string): Promise<string[]> =>
  withClient(url, async (c) =>
    (await checkLedger({ query: async (sql, params): Promise<unknown> => (await c.query(sql, params)).rows as unknown })).map(
      (v) => `${v.invariant}: ${v.count} (e.g. ${v.example})`,
    ),
  );

export async function verify(pgUrl: string, driver: Driver, hooks: WebhookReceiver, drainTimeoutMs: number): Promise<Verdict> {
  const t0 = Date.now();
  // the submissions still on the wire when the load phase ended: their answers decide what was accepted
  await waitFor(() => driver.inFlightNow() === 0 || undefined, { timeoutMs: 60_000, intervalMs: 100, what: 'submissions in flight to answer' }).catch(
    () => undefined,
  );
  const ids = [...driver.tasks.keys()];
  const withHook = [...driver.tasks.values()].filter((t) => t.webhook);
  const done = async (): Promise<boolean> => {
    const t = await query<{ open: number; unsettled: number }>(pgUrl, TASKS_SQL);
    return t.open === 0 && t.unsettled === 0 && withHook.every((x) => hooks.byTask.has(x.id));
  };
  await waitFor(async () => (await done()) || undefined, {
    timeoutMs: drainTimeoutMs,
    intervalMs: 1000,
    what: 'every task terminal, settled and its webhook delivered',
  }).catch(() => undefined);
  const drainMs = Date.now() - t0;
  const t = await query<{ n: number; open: number; completed: number; failed: number; cancelled: number; unsettled: number; double: number }>(pgUrl, TASKS_SQL);
  const known = await query<{ n: number }>(pgUrl, `SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1)`, [ids]);
  const chat = await query<{ n: number; bad: number }>(pgUrl, CHAT_SQL);
  const acc = await query<{ n: number; held: string }>(pgUrl, ACCOUNTS_SQL);
  const ledger = await ledgerViolations(pgUrl);
  return {
    accepted: ids.length,
    inDatabase: t.n,
    open: t.open,
    missing: ids.length - known.n,
    unsettled: t.unsettled,
    doubleSettled: t.double,
    completed: t.completed,
    failed: t.failed,
    cancelled: t.cancelled,
    chatCalls: chat.n,
    chatAnswered: driver.messagesOk,
    chatUnanswered: driver.ambiguousMessages,
    chatBad: chat.bad,
    accountsChecked: acc.n,
    ledger,
    heldAtEnd: acc.held,
    webhooksExpected: withHook.length,
    webhooksMissing: withHook.filter((x) => !hooks.byTask.has(x.id)).length,
    webhookDuplicates: hooks.duplicates(),
    drainMs,
  };
}

/** The verdict's failures, as sentences (empty: green). `faults` allows what a kill -9 legitimately causes. */
export function problems(v: Verdict, faults: boolean): string[] {
  const p: string[] = [];
  if (v.accepted === 0) p.push('no task was accepted');
  if (v.missing) p.push(`${v.missing} accepted tasks are not in the database (lost)`);
  if (v.open) p.push(`${v.open} tasks are not terminal`);
  if (v.unsettled) p.push(`${v.unsettled} tasks are not settled exactly once`);
  if (v.doubleSettled) p.push(`${v.doubleSettled} tasks are double-settled`);
  if (v.chatBad) p.push(`${v.chatBad} chat calls do not have exactly one capture`);
  // a call answered 200 is recorded within 20 ms; one whose answer the client lost (its edge killed, or the client's
  // 30 s timeout) may be recorded too: the gateway did the work
  if (v.chatCalls < v.chatAnswered || v.chatCalls > v.chatAnswered + v.chatUnanswered)
    p.push(`${v.chatAnswered} chat calls answered (${v.chatUnanswered} more without an answer), ${v.chatCalls} recorded`);
  for (const l of v.ledger) p.push(`ledger invariant broken: ${l}`);
  if (v.webhooksMissing) p.push(`${v.webhooksMissing} of ${v.webhooksExpected} webhooks never arrived`);
  if (!faults && v.webhookDuplicates) p.push(`${v.webhookDuplicates} webhooks delivered twice without a fault`);
  if (v.failed && !faults) p.push(`${v.failed} tasks failed (every request of the mix should complete)`);
  return p;
}
