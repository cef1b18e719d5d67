import type { DataSource, QueryRunner } from 'typeorm';

/**
 * A database shaped like a gateway that has run for months, built with `generate_series` (no row leaves Postgres):
 * the periodic queries' plans (scripts/explain-volume.ts) are only worth reading on a table of production size.
 *
 * Shape (every number a parameter, so a test builds it small):
 * - `accounts` accounts with `keysPerAccount` API keys each (task i on key i mod that of its account); tasks fall on
 *   the accounts skewed (the account of u³ for a uniform u: a few hot accounts hold most of the rows, as in
 *   production). With `channels`, that many channels, each model's tasks on one of them (as a channel serves a model).
 * - `tasks` tasks spread evenly over the last `days` days with time-ordered ids (`task_` + the creation time in
 *   base 36, as newTaskId makes them), pools image 50 % / video 20 % / artgen 10 % / avatar 5 % / chat 15 %.
 *   The newest `openPerMille` ‰ are open (0: none; else at least one) (pending or processing; about a tenth past their deadline, for the
 *   timeout sweep), the `unsettledPerMille` ‰ before them ended and unsettled (the billing sweep's backlog), every
 *   other one completed (85 %) or failed (15 %) and settled. 30 % of the last 26 hours carry an Idempotency-Key
 *   (2 hours past the 24 h expiry: a backlog for expireIdempotencyKeys), 10 % a callback URL with one webhook
 *   delivery record each.
 * - `ledger` ledger entries: a hold per task and a capture or release per settled task (about 2 per task), the
 *   rest top-ups and closed credit leases (hold and release) on the accounts, spread over the same days.
 * Secondary indexes of `tasks`, `ledger_entries` and `webhook_deliveries` are dropped during the load and built
 * again afterwards (a bulk load's usual order: minutes instead of an hour at 10 M rows); the triggers stay on, so
 * `ledger_totals` and `task_inflight` agree with the rows. Ends with VACUUM ANALYZE of the tables it filled.
 */
export interface VolumeShape {
  tasks: number;
  /** Total ledger entries wanted; at least about 2 per task are written whatever this says. */
  ledger: number;
  accounts?: number;
  keysPerAccount?: number;
  channels?: number;
  days?: number;
  openPerMille?: number;
  unsettledPerMille?: number;
  /** Rows per INSERT statement (progress is reported per chunk). */
  chunk?: number;
}

export interface VolumeSeedResult {
  tasks: number;
  ledger: number;
  webhookDeliveries: number;
  creditLeases: number;
  accounts: number;
  seconds: number;
}

/**
 * Balances that agree with the rows: `held` is what the unsettled tasks and the active leases hold (a lease closed
 * or a call settled later gives it back), `available` large enough that no hold is refused.
 */
const HELD_SQL = `
  UPDATE accounts a SET available = 1000000000000000, held = COALESCE(h.held, 0)
  FROM (SELECT account_id, sum(held)::bigint AS held FROM (
          SELECT account_id, price AS held FROM tasks WHERE settled_at IS NULL
          UNION ALL SELECT account_id, amount FROM credit_leases WHERE status = 'active') x GROUP BY account_id) h
  WHERE h.account_id = a.id`;

const BIG_TABLES = ['tasks', 'ledger_entries', 'webhook_deliveries'];

/** The pool of task i (a fixed hash of i, so the spread is the same on every run). */
const POOL_OF = `(CASE WHEN (i * 37) % 100 < 50 THEN 'image' WHEN (i * 37) % 100 < 70 THEN 'video'
  WHEN (i * 37) % 100 < 80 THEN 'artgen' WHEN (i * 37) % 100 < 85 THEN 'avatar' ELSE 'chat' END)`;

export async function seedVolume(ds: DataSource, shape: VolumeShape, progress: (line: string) => void = () => undefined): Promise<VolumeSeedResult> {
  const t0 = Date.now();
  const accounts = shape.accounts ?? 1000;
  const days = shape.days ?? 60;
  const n = shape.tasks;
  const perMille = (pm: number): number => (pm === 0 ? 0 : Math.max(1, Math.floor((n * pm) / 1000)));
  const open = perMille(shape.openPerMille ?? 5);
  const unsettled = perMille(shape.unsettledPerMille ?? 1);
  const keysPerAccount = shape.keysPerAccount ?? 1;
  const chunk = shape.chunk ?? 500_000;
  const qr = ds.createQueryRunner();
  await qr.connect();
  const q = (sql: string, params: unknown[] = []): Promise<Array<Record<string, unknown>>> => qr.query(sql, params);
  try {
    await q(`SET synchronous_commit = off`);
    await q(`SET maintenance_work_mem = '256MB'`);
    await q(`SET statement_timeout = 0`);
    await seedAccounts(q, accounts, keysPerAccount, days);
    const channels = await seedChannels(q, shape.channels ?? 0);
    const dropped = await dropSecondaryIndexes(q);
    progress(`volume-seed: ${dropped.length} secondary indexes dropped for the load`);

    // tasks: row i's time is spread evenly over `days`, the newest last
    const span = days * 86_400;
    for (let lo = 1; lo <= n; lo += chunk) {
      const hi = Math.min(n, lo + chunk - 1);
      await q(
        `WITH t AS (
         INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, status, progress, request, price, price_snapshot,
                            result, error, created_at, started_at, completed_at, deadline_at, updated_at, settled_at,
                            idempotency_key, idempotency_fingerprint, request_id, callback_url, inflight_shard, upstream_task_id, channel_id)
         SELECT 'task_' || ${base36Of('(extract(epoch FROM ts) * 1000)::bigint')} || substr(md5(i::text), 1, 15),
                a.account_id, a.key_ids[1 + i % $8::int], m.model, m.model, pool, st,
                CASE WHEN st IN ('completed','failed') THEN 100 WHEN st = 'processing' THEN 40 ELSE 0 END,
                jsonb_build_object('prompt', 'a quiet harbour at dawn, seagulls, soft light, film grain ' || i, 'size', '1024x1024', 'n', 1),
                1000 + (i % 7) * 250, '{"unit":1000,"ratio":1}'::jsonb,
                CASE WHEN st = 'completed' THEN jsonb_build_object('urls', jsonb_build_array('https://cdn.example.com/r/' || md5(i::text) || '.png')) END,
                CASE WHEN st = 'failed' THEN '{"code":"upstream_error","message":"the upstream refused the prompt"}'::jsonb END,
                ts, ts + interval '1 second', CASE WHEN st IN ('completed','failed') THEN ts + interval '40 seconds' END,
                CASE WHEN st IN ('pending','processing') THEN now() + ((i % 40) - 4) * interval '45 seconds' ELSE ts + interval '30 minutes' END,
                CASE WHEN st IN ('completed','failed') THEN ts + interval '40 seconds' ELSE ts + interval '5 seconds' END,
                CASE WHEN i <= $1::bigint - $2::bigint - $3::bigint THEN ts + interval '41 seconds' END,
                CASE WHEN i % 10 < 3 AND ts > now() - interval '26 hours' THEN 'idem-' || i END,
                CASE WHEN i % 10 < 3 AND ts > now() - interval '26 hours' THEN md5(i::text) END,
                'req_' || md5((i * 7)::text),
                CASE WHEN i % 10 = 9 THEN 'https://hooks.example.com/gmg/' || (i % 97) END,
                CASE WHEN st IN ('pending','processing') THEN (i % 4)::int END,
                CASE WHEN st <> 'pending' THEN 'up-' || md5(i::text) END,
                ($9::uuid[])[1 + (array_position(ARRAY['image', 'video', 'artgen', 'avatar', 'chat'], pool) - 1) % greatest(cardinality($9::uuid[]), 1)]
         FROM generate_series($4::bigint, $5::bigint) i,
              LATERAL (SELECT now() - ($1::bigint - i) * ($6::float8 / $1::bigint) * interval '1 second' AS ts, ${POOL_OF} AS pool,
                              CASE WHEN i > $1::bigint - $2::bigint THEN (CASE WHEN i % 3 = 0 THEN 'pending' ELSE 'processing' END)
                                   WHEN i % 100 < 15 THEN 'failed' ELSE 'completed' END AS st,
                              1 + floor($7::int * power(((i * 2654435761) % 1000003) / 1000003.0, 3))::int AS acct) v,
              LATERAL (SELECT CASE pool WHEN 'image' THEN 'lumen-2-pro' WHEN 'video' THEN 'reel-1' WHEN 'artgen' THEN 'artgen'
                                        WHEN 'avatar' THEN 'avatar-1' ELSE 'claude-sonnet' END AS model) m,
              volume_accounts a
         WHERE a.n = v.acct
         RETURNING account_id, id, price, status, created_at, settled_at
       )
       INSERT INTO ledger_entries (account_id, task_id, kind, amount, created_at)
       SELECT t.account_id, t.id, k.kind, t.price, k.at FROM t,
              LATERAL (SELECT 'hold' AS kind, t.created_at AS at
                       UNION ALL SELECT CASE WHEN t.status = 'failed' THEN 'release' ELSE 'capture' END, t.settled_at
                       WHERE t.settled_at IS NOT NULL) k`,
        [n, open, unsettled, lo, hi, span, accounts, keysPerAccount, channels],
      );
      progress(`volume-seed: tasks and their ledger entries ${hi}/${n} (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
    }

    const [{ c: taskEntries }] = (await q(`SELECT count(*)::bigint AS c FROM ledger_entries`)) as Array<{ c: string }>;
    // the rest: credit leases (a hold and, once closed, a release each; a third of the rest) and top-ups. One in 500
    // and the newest two are still active (the newest one live, the others expired: the chat sweeper's work)
    const rest = Math.max(accounts * 2, shape.ledger - Number(taskEntries));
    const leases = Math.max(accounts, Math.floor(rest / 6));
    await q(
      `INSERT INTO credit_leases (id, account_id, edge_id, amount, used, status, expires_at, created_at, closed_at)
       SELECT 'lease_' || lpad(i::text, 12, '0'), a.account_id, 'edge-' || (i % 8), 50000, 20000 + i % 30000,
              CASE WHEN i % 500 = 0 OR i >= $1::int - 1 THEN 'active' ELSE 'closed' END, ts + interval '5 minutes', ts,
              CASE WHEN i % 500 = 0 OR i >= $1::int - 1 THEN NULL ELSE ts + interval '5 minutes' END
       FROM generate_series(1, $1::int) i,
            LATERAL (SELECT now() - ($1::int - i) * ($2::float8 / $1::int) * interval '1 second' AS ts) v, volume_accounts a
       WHERE a.n = 1 + i % $3::int`,
      [leases, span, accounts],
    );
    await q(
      `INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta, created_at)
       SELECT c.account_id, c.id, k.kind, k.amount, '{"kind":"credit_lease"}'::jsonb, k.at FROM credit_leases c,
              LATERAL (SELECT 'hold' AS kind, c.amount, c.created_at AS at
                       UNION ALL SELECT 'release', c.amount - c.used, c.closed_at WHERE c.status = 'closed') k`,
    );
    const topups = Math.max(accounts, rest - leases * 2);
    await q(
      `INSERT INTO ledger_entries (account_id, kind, amount, created_at)
       SELECT a.account_id, 'topup', 10000000, now() - ($1::int - i) * ($2::float8 / $1::int) * interval '1 second'
       FROM generate_series(1, $1::int) i, volume_accounts a WHERE a.n = 1 + i % $3::int`,
      [topups, span, accounts],
    );
    progress(`volume-seed: ${leases} credit leases and ${topups} top-ups (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
    // one delivery record per task with a callback URL
    await q(
      `INSERT INTO webhook_deliveries (account_id, task_id, event, delivery_id, attempt, url, status_code, succeeded, duration_ms, created_at)
       SELECT account_id, id, 'task.' || status, 'dlv_' || md5(id), 1, callback_url, 200, true, 120, completed_at + interval '2 seconds'
       FROM tasks WHERE callback_url IS NOT NULL AND completed_at IS NOT NULL`,
    );
    await q(HELD_SQL);
    await rebuildIndexes(q, dropped, progress, t0);
    for (const t of [...BIG_TABLES, 'credit_leases', 'accounts', 'api_keys']) await q(`VACUUM ANALYZE ${t}`);
    await q(`DROP TABLE volume_accounts`);
    const [counts] = (await q(
      `SELECT (SELECT count(*) FROM tasks)::bigint AS tasks, (SELECT count(*) FROM ledger_entries)::bigint AS ledger,
              (SELECT count(*) FROM webhook_deliveries)::bigint AS deliveries, (SELECT count(*) FROM credit_leases)::bigint AS leases`,
    )) as Array<Record<string, string>>;
    return {
      tasks: Number(counts!.tasks),
      ledger: Number(counts!.ledger),
      webhookDeliveries: Number(counts!.deliveries),
      creditLeases: Number(counts!.leases),
      accounts,
      seconds: (Date.now() - t0) / 1000,
    };
  } finally {
    await qr.release();
  }
}

/** `v` (a bigint SQL expression) as 9 base-36 digits, the way timePrefix36 writes a task id's time. */
function base36Of(v: string): string {
  const digits = Array.from({ length: 9 }, (_, k) => `substr('0123456789abcdefghijklmnopqrstuvwxyz', (${v} / ${36 ** (8 - k)}::bigint % 36)::int + 1, 1)`);
  return `(${digits.join(' || ')})`;
}

type Q = (sql: string, params?: unknown[]) => Promise<Array<Record<string, unknown>>>;

async function seedAccounts(q: Q, accounts: number, keysPerAccount: number, days: number): Promise<void> {
  await q(`CREATE TABLE volume_accounts (n int PRIMARY KEY, account_id uuid NOT NULL, key_ids uuid[] NOT NULL)`);
  await q(
    `WITH a AS (
       INSERT INTO accounts (name, created_at) SELECT 'volume-' || i, now() - $2::int * interval '1 day' FROM generate_series(1, $1::int) i
       RETURNING id, name
     ), k AS (
       INSERT INTO api_keys (account_id, name, key_hash, prefix)
       SELECT id, CASE WHEN j = 1 THEN 'main' ELSE 'key-' || j END, md5('volume-key-' || name || '-' || j), 'sk-vol'
       FROM a, generate_series(1, $3::int) j RETURNING id, account_id, name
     )
     INSERT INTO volume_accounts (n, account_id, key_ids)
     SELECT row_number() OVER (ORDER BY k.account_id), k.account_id, array_agg(k.id ORDER BY k.name) FROM k GROUP BY k.account_id`,
    [accounts, days, keysPerAccount],
  );
}

/** `count` channels (none: the tasks have no channel). */
async function seedChannels(q: Q, count: number): Promise<string[]> {
  const rows = await q(
    `INSERT INTO channels (name, base_url, api_key) SELECT 'volume-' || c, 'http://127.0.0.1:9', 'sk-volume' FROM generate_series(1, $1::int) c RETURNING id`,
    [count],
  );
  return rows.map((r) => r.id as string);
}

interface IndexDef {
  name: string;
  def: string;
}

/** The indexes of the big tables that no constraint owns (the primary and unique keys stay: the load checks them). */
async function dropSecondaryIndexes(q: Q): Promise<IndexDef[]> {
  const rows = (await q(
    `SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def
     FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
     WHERE t.relname = ANY($1::text[]) AND t.relnamespace = 'public'::regnamespace
       AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`,
    [BIG_TABLES],
  )) as Array<{ name: string; def: string }>;
  for (const r of rows) await q(`DROP INDEX ${r.name}`);
  return rows;
}

async function rebuildIndexes(q: Q, defs: IndexDef[], progress: (line: string) => void, t0: number): Promise<void> {
  for (const d of defs) {
    await q(d.def);
    progress(`volume-seed: index ${d.name} built (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  }
}

/** For a caller that keeps the volume database between runs: whether it already holds at least `tasks` tasks. */
export async function volumeSeeded(ds: Pick<DataSource, 'query'> | QueryRunner, tasks: number): Promise<boolean> {
  const [r] = (await ds.query(`SELECT reltuples::bigint AS n FROM pg_class WHERE relname = 'tasks' AND relnamespace = 'public'::regnamespace`)) as Array<{
    n: string;
  }>;
  return Number(r?.n ?? 0) >= tasks * 0.95;
}
