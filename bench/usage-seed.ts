import type { DataSource } from 'typeorm';

export interface UsageSeed {
  tasks: number;
  /** Spread over this many days, ending now. */
  days: number;
  accounts: number;
  /** Key k belongs to account k % accounts and calls 3 of the models: (k + j) % models, j = 0..2. */
  keys: number;
  models: number;
  /** Model m is served by channel m % channels. */
  channels: number;
}

export const DEFAULT_USAGE_SEED: UsageSeed = { tasks: 1_000_000, days: 30, accounts: 20, keys: 50, models: 8, channels: 4 };

/**
 * A database of `tasks` settled tasks and their ledger rows, with SQL generate_series (one statement per table, no
 * round trip per row): accounts, keys and channels first, then tasks evenly spread over `days` days ending now
 * (every 10th a chat call, every 20th failed; a media task takes 1–61 s, a chat call 0.2–8.2 s), each with its
 * `hold` and its `capture` (a failed task: a `release` instead) in `ledger_entries`. The tasks are already settled:
 * the usage rollup then reads them exactly as it reads the fleet's. Returns the keys' and accounts' ids.
 */
export async function seedUsageDatabase(ds: DataSource, s: UsageSeed = DEFAULT_USAGE_SEED): Promise<{ accounts: string[]; keys: string[] }> {
  const accounts = (
    (await ds.query(`INSERT INTO accounts (name) SELECT 'usage-bench-' || a FROM generate_series(0, $1 - 1) a RETURNING id`, [s.accounts])) as Array<{
      id: string;
    }>
  ).map((r) => r.id);
  const keys = (
    (await ds.query(
      `INSERT INTO api_keys (account_id, name, key_hash, prefix)
       SELECT ($1::uuid[])[1 + k % $2], 'bench-' || k, md5('usage-bench-key-' || k), 'sk-gmg-b' || k FROM generate_series(0, $3 - 1) k
       RETURNING id`,
      [accounts, s.accounts, s.keys],
    )) as Array<{ id: string }>
  ).map((r) => r.id);
  // the order RETURNING gave is the insert order (k): read it back by name to be sure
  const byName = (await ds.query(`SELECT id, name FROM api_keys WHERE name LIKE 'bench-%'`)) as Array<{ id: string; name: string }>;
  const keyIds = byName.sort((a, b) => Number(a.name.slice(6)) - Number(b.name.slice(6))).map((r) => r.id);
  const channels = (
    (await ds.query(
      `INSERT INTO channels (name, base_url, api_key) SELECT 'bench-' || c, 'http://127.0.0.1:9', 'sk-bench' FROM generate_series(0, $1 - 1) c RETURNING id`,
      [s.channels],
    )) as Array<{ id: string }>
  ).map((r) => r.id);
  const spanMs = s.days * 86_400_000;
  await ds.query(
    `INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, status, progress, request, price, price_snapshot,
                        channel_id, created_at, started_at, completed_at, settled_at, deadline_at, updated_at)
     SELECT 'task_bench' || lpad(i::text, 9, '0'), ($1::uuid[])[1 + (i % $3) % $4], ($2::uuid[])[1 + i % $3],
            'model-' || m, 'model-' || m, CASE WHEN chat THEN 'chat' ELSE 'image' END,
            CASE WHEN i % 20 = 7 THEN 'failed' ELSE 'completed' END, 100, '{}'::jsonb, 1000 + (i % 7) * 100, '{}'::jsonb,
            ($5::uuid[])[1 + m % $6], created, created, created + dur, created + dur, created + interval '1 day', created + dur
     FROM (SELECT i, i % 10 = 3 AS chat, ((i % $3) + (i / $3) % 3) % $7 AS m,
                  now() - make_interval(secs => ($8::double precision - i::double precision * $8 / $9) / 1000) AS created,
                  CASE WHEN i % 10 = 3 THEN make_interval(secs => 0.2 + (i::bigint * 7919 % 8000) / 1000.0)
                       ELSE make_interval(secs => 1 + (i::bigint * 7919 % 60000) / 1000.0) END AS dur
           FROM generate_series(0, $9 - 1) i) x`,
    [accounts, keyIds, s.keys, s.accounts, channels, s.channels, s.models, spanMs, s.tasks],
  );
  await ds.query(
    `INSERT INTO ledger_entries (account_id, task_id, kind, amount, created_at)
     SELECT account_id, id, k.kind, price, created_at FROM tasks, LATERAL (VALUES ('hold'), (CASE WHEN status = 'failed' THEN 'release' ELSE 'capture' END)) k(kind)
     WHERE id LIKE 'task_bench%'`,
  );
  await ds.query(`VACUUM ANALYZE tasks`);
  await ds.query(`VACUUM ANALYZE ledger_entries`);
  return { accounts, keys: keyIds.length ? keyIds : keys };
}
