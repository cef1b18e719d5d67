import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One statement per lease for a chat call's open rows and records together (issue 36 item 3, docs/benchmarks.md
 * "Postgres CPU per chat call: what decides it"): a statement's fixed cost is several times a call's rows, so the
 * edge's lease book sends what it has pending for a lease — calls started, calls finished — as one
 * `gmg_write_chat_calls(lease, opens, records)` instead of one `gmg_open_chat_calls` and one
 * `gmg_record_chat_calls`. It does what those two do, in one transaction, in that order: the open rows
 * (INSERT … ON CONFLICT DO NOTHING), then the records (the rows moved to their end, or written when missing; their
 * captures once; the lease's `used`; the account's held → spent). Returns whether the lease was active and how many
 * open rows it wrote; nothing is written when the lease is not active.
 *
 * Commit: asynchronous (`synchronous_commit = off` for its own transaction only, as `gmg_open_chat_calls`) only when
 * it carries no record; a statement carrying a record moves money and commits synchronously (docs/messages.md "What
 * a crash costs"). The lease row is locked FOR UPDATE when records come (they update `used`), FOR SHARE otherwise.
 *
 * Expand only: the previous release calls `gmg_open_chat_calls` / `gmg_record_chat_calls` while a deploy rolls, so
 * both stay (migration 1765760000000-chat-call-functions). A change to this function is a new migration (CREATE OR
 * REPLACE) keeping its arguments and result columns while the previous release still runs.
 */
export class ChatCallWrite1766000000000 implements MigrationInterface {
  name = 'ChatCallWrite1766000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION gmg_write_chat_calls(p_lease text, p_opens jsonb, p_records jsonb) RETURNS TABLE (out_active int, out_written int)
      LANGUAGE plpgsql AS $fn$
      DECLARE
        v_account credit_leases.account_id%TYPE;
        v_written int := 0;
        v_charged bigint;
      BEGIN
        IF jsonb_array_length(p_records) = 0 THEN
          -- open rows only: no money moves, the first byte's path does not wait for the WAL flush
          PERFORM set_config('synchronous_commit', 'off', true);
          SELECT account_id INTO v_account FROM credit_leases WHERE id = p_lease AND status = 'active' FOR SHARE;
        ELSE
          SELECT account_id INTO v_account FROM credit_leases WHERE id = p_lease AND status = 'active' FOR UPDATE;
        END IF;
        IF v_account IS NULL THEN
          RETURN QUERY SELECT 0, 0;
          RETURN;
        END IF;
        IF jsonb_array_length(p_opens) > 0 THEN
          WITH x AS (
           SELECT * FROM jsonb_to_recordset(p_opens) AS x(id text, account_id uuid, api_key_id uuid, model text, requested_model text,
             price bigint, request jsonb, price_snapshot jsonb, started_at timestamptz)
         ), ins AS (
           INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, status, progress, request, price, price_snapshot,
                              result, created_at, started_at, deadline_at, lease_id)
           SELECT x.id, v_account, x.api_key_id, x.model, x.requested_model, 'chat', 'processing', 0, x.request, x.price, x.price_snapshot,
                  jsonb_build_object('cost_so_far', '0'), x.started_at, x.started_at, now() + interval '1 day', p_lease
             FROM x WHERE x.account_id = v_account
           ON CONFLICT (id) DO NOTHING RETURNING id
         )
         SELECT count(*)::int INTO v_written FROM ins;
        END IF;
        IF jsonb_array_length(p_records) > 0 THEN
          -- a separate statement: it sees the open rows written above (a call in both is written once, captured once)
          WITH x AS (
           SELECT * FROM jsonb_to_recordset(p_records) AS x(id text, account_id uuid, api_key_id uuid, model text, requested_model text,
             status text, price bigint, cost bigint, request jsonb, price_snapshot jsonb, result jsonb, error jsonb, channel_id uuid, started_at timestamptz)
         ), ins AS (
           -- a new row, or the call's open row moved to its end; a call already ended (recorded, or charged by the
           -- lease's close) is not returned, so not captured again
           INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, status, progress, request, price, price_snapshot,
                              result, error, channel_id, created_at, started_at, completed_at, settled_at, deadline_at, lease_id)
           SELECT x.id, v_account, x.api_key_id, x.model, x.requested_model, 'chat', x.status, 100, x.request, x.price, x.price_snapshot,
                  x.result, x.error, x.channel_id, x.started_at, x.started_at, now(), now(), now(), p_lease
             FROM x WHERE x.account_id = v_account
           ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, progress = 100, result = EXCLUDED.result, error = EXCLUDED.error,
                  channel_id = EXCLUDED.channel_id, completed_at = now(), settled_at = now(), updated_at = now()
             WHERE tasks.status IN ('pending','processing') AND tasks.lease_id = EXCLUDED.lease_id
           RETURNING id, account_id
         ), cap AS (
           INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta)
           SELECT ins.account_id, ins.id, 'capture', x.cost, jsonb_build_object('lease', p_lease) FROM ins JOIN x ON x.id = ins.id
           ON CONFLICT (task_id, kind) DO NOTHING RETURNING amount
         )
         SELECT COALESCE(sum(amount), 0)::bigint INTO v_charged FROM cap;
          UPDATE credit_leases SET used = used + v_charged WHERE id = p_lease;
          IF v_charged > 0 THEN
            UPDATE accounts SET held = held - v_charged, spent = spent + v_charged, updated_at = now() WHERE id = v_account;
          END IF;
        END IF;
        RETURN QUERY SELECT 1, v_written;
      END
      $fn$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS gmg_write_chat_calls(text, jsonb, jsonb)`);
  }
}
