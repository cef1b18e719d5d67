/**
 * The ledger invariants, checked from Postgres in ONE statement (one snapshot: every money statement is atomic, so
 * they hold at any moment, mid-load included). One pass per table (hash aggregates), not a subquery per task: seconds
 * at a million tasks. Used by the model-based property tests, the chaos scenarios, the fleet run and the ceiling bench.
 *
 * Always (per account, task, key and lease in scope):
 * - non-negative: available, held, spent and every ledger amount;
 * - balance: available + held = topups − captures; spent: spent = captures;
 * - stranded: held = the prices of the unsettled tasks it holds directly + what active leases have not spent;
 * - one hold: a task held on the account row or a task lease has exactly one `hold`; a chat call paid from a credit
 *   lease (`tasks.lease_id`) none;
 * - settled once: at most one capture and one release per task; no early settlement: none before `settled_at`;
 *   settlement sums to the hold (a settled held task: capture + release = hold); chat capture: a settled chat call
 *   has exactly one capture; failed task captured: a failed task (not a chat call, charged for what it streamed)
 *   captures nothing; settled but not terminal;
 * - in-flight counter: a key's counter rows sum to its open counted tasks;
 * - lease hold / lease used / lease release: a lease's `hold` is its amount, its `used` is what its tasks and calls
 *   took (entries with `meta.lease`) and never above the amount, a closed lease released exactly the rest once.
 * On request: not settled (every task terminal and settled), lease active (every lease closed).
 */

/** What the check needs of a connection: TypeORM's `DataSource.query`, or a pg client wrapped to return its rows. */
export interface LedgerDb {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

export interface LedgerScope {
  /** Only these accounts (and their tasks, keys and leases); default every account. */
  accounts?: readonly string[];
  /** Every task is terminal and settled (the end of a run that waited for it). */
  settled?: boolean;
  /** No lease is active (every edge closed its leases, or they were swept). */
  leasesClosed?: boolean;
}

/** A broken invariant: its name, how many rows break it and one of them. */
export interface LedgerViolation {
  invariant: string;
  count: number;
  example: string;
}

const LEDGER_CHECK_SQL = `
WITH acc AS (
  SELECT id, available, held, spent FROM accounts WHERE $1::uuid[] IS NULL OR id = ANY($1::uuid[])
), led AS (
  SELECT * FROM ledger_entries WHERE account_id IN (SELECT id FROM acc)
), money AS (
  SELECT account_id, COALESCE(sum(amount) FILTER (WHERE kind = 'topup'), 0) AS topups,
         COALESCE(sum(amount) FILTER (WHERE kind = 'capture'), 0) AS captures, count(*) FILTER (WHERE amount < 0) AS negative
  FROM led GROUP BY account_id
), per_task AS (
  SELECT task_id, count(*) FILTER (WHERE kind = 'hold') AS holds, COALESCE(sum(amount) FILTER (WHERE kind = 'hold'), 0) AS held,
         count(*) FILTER (WHERE kind = 'capture') AS captures, COALESCE(sum(amount) FILTER (WHERE kind = 'capture'), 0) AS captured,
         count(*) FILTER (WHERE kind = 'release') AS releases, COALESCE(sum(amount) FILTER (WHERE kind = 'release'), 0) AS released
  FROM led WHERE task_id IS NOT NULL GROUP BY task_id
), t AS (
  SELECT t.id, t.account_id, t.pool, t.status, t.price, t.settled_at, t.lease_id,
         COALESCE(e.holds, 0) AS holds, COALESCE(e.held, 0) AS held, COALESCE(e.captures, 0) AS captures,
         COALESCE(e.captured, 0) AS captured, COALESCE(e.releases, 0) AS releases, COALESCE(e.released, 0) AS released
  FROM tasks t LEFT JOIN per_task e ON e.task_id = t.id WHERE t.account_id IN (SELECT id FROM acc)
), open_price AS (
  SELECT account_id, sum(price) AS price FROM t WHERE settled_at IS NULL AND lease_id IS NULL GROUP BY account_id
), leases AS (
  SELECT l.id, l.account_id, l.status, l.amount, l.used, COALESCE(e.holds, 0) AS holds, COALESCE(e.held, 0) AS held,
         COALESCE(e.releases, 0) AS releases, COALESCE(e.released, 0) AS released
  FROM credit_leases l LEFT JOIN per_task e ON e.task_id = l.id WHERE l.account_id IN (SELECT id FROM acc)
), lease_rest AS (
  SELECT account_id, sum(amount - used) AS rest FROM leases WHERE status = 'active' GROUP BY account_id
), lease_spent AS (
  SELECT meta->>'lease' AS lease_id, sum(amount) AS amount FROM led WHERE kind IN ('hold', 'capture') AND meta ? 'lease' GROUP BY 1
), keys AS (
  SELECT id FROM api_keys WHERE account_id IN (SELECT id FROM acc)
), open_tasks AS (
  SELECT api_key_id, count(*) AS n FROM tasks
  WHERE api_key_id IN (SELECT id FROM keys) AND status IN ('pending', 'processing') AND inflight_shard IS NOT NULL GROUP BY api_key_id
), counters AS (
  SELECT api_key_id, sum(open) AS n FROM task_inflight WHERE api_key_id IN (SELECT id FROM keys) GROUP BY api_key_id
), a AS (
  SELECT acc.*, COALESCE(m.topups, 0) AS topups, COALESCE(m.captures, 0) AS captures, COALESCE(m.negative, 0) AS negative,
         COALESCE(o.price, 0) AS open_price, COALESCE(r.rest, 0) AS lease_rest
  FROM acc LEFT JOIN money m ON m.account_id = acc.id LEFT JOIN open_price o ON o.account_id = acc.id LEFT JOIN lease_rest r ON r.account_id = acc.id
)
SELECT 'non-negative' AS invariant, count(*)::int AS n, min(id::text) AS example FROM a
  WHERE available < 0 OR held < 0 OR spent < 0 OR negative > 0
UNION ALL SELECT 'balance', count(*)::int, min(id::text) FROM a WHERE available + held <> topups - captures
UNION ALL SELECT 'spent', count(*)::int, min(id::text) FROM a WHERE spent <> captures
UNION ALL SELECT 'stranded', count(*)::int, min(id::text) FROM a WHERE held <> open_price + lease_rest
UNION ALL SELECT 'one hold', count(*)::int, min(id) FROM t WHERE holds <> CASE WHEN lease_id IS NULL THEN 1 ELSE 0 END
UNION ALL SELECT 'settled once', count(*)::int, min(id) FROM t WHERE captures > 1 OR releases > 1
UNION ALL SELECT 'no early settlement', count(*)::int, min(id) FROM t WHERE settled_at IS NULL AND captures + releases > 0
UNION ALL SELECT 'settlement sums to the hold', count(*)::int, min(id) FROM t
  WHERE settled_at IS NOT NULL AND lease_id IS NULL AND (captures + releases = 0 OR captured + released <> held)
UNION ALL SELECT 'chat capture', count(*)::int, min(id) FROM t WHERE pool = 'chat' AND settled_at IS NOT NULL AND captures <> 1
UNION ALL SELECT 'failed task captured', count(*)::int, min(id) FROM t WHERE pool <> 'chat' AND status = 'failed' AND captures > 0
UNION ALL SELECT 'settled but not terminal', count(*)::int, min(id) FROM t WHERE settled_at IS NOT NULL AND status NOT IN ('completed', 'failed')
UNION ALL SELECT 'in-flight counter', count(*)::int, min(k.id::text) FROM keys k
  LEFT JOIN open_tasks o ON o.api_key_id = k.id LEFT JOIN counters c ON c.api_key_id = k.id WHERE COALESCE(c.n, 0) <> COALESCE(o.n, 0)
UNION ALL SELECT 'lease hold', count(*)::int, min(id) FROM leases WHERE holds <> 1 OR held <> amount
UNION ALL SELECT 'lease used', count(*)::int, min(l.id) FROM leases l LEFT JOIN lease_spent s ON s.lease_id = l.id
  WHERE l.used <> COALESCE(s.amount, 0) OR l.used > l.amount
UNION ALL SELECT 'lease release', count(*)::int, min(id) FROM leases
  WHERE CASE WHEN status = 'closed' THEN releases <> 1 OR released <> amount - used ELSE releases <> 0 END
UNION ALL SELECT 'not settled', count(*)::int, min(id) FROM t WHERE $2::boolean AND (status NOT IN ('completed', 'failed') OR settled_at IS NULL)
UNION ALL SELECT 'lease active', count(*)::int, min(id) FROM leases WHERE $3::boolean AND status = 'active'`;

/** The broken invariants (none: []), in the order above. */
export async function checkLedger(db: LedgerDb, scope: LedgerScope = {}): Promise<LedgerViolation[]> {
  const rows = (await db.query(LEDGER_CHECK_SQL, [scope.accounts ?? null, scope.settled === true, scope.leasesClosed === true])) as Array<{
    invariant: string;
    n: number;
    example: string | null;
  }>;
  return rows.filter((r) => r.n > 0).map((r) => ({ invariant: r.invariant, count: r.n, example: r.example ?? '' }));
}
