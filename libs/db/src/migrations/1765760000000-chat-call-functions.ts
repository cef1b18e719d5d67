import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The chat call's two per-call statements as PL/pgSQL functions (issue 36 item 3, docs/benchmarks.md "Postgres CPU
 * per chat call"): the statements are the ones CreditLeaseRepository sent inline (`openCalls`, `record`), unchanged;
 * a function's plans are cached per server connection, so they are no longer parsed and planned on every call —
 * planning was about a third of each statement's time, and the open row is on the first byte's path. Works through
 * PgBouncer's transaction pooling (nothing is prepared on the protocol level).
 *
 * `gmg_open_chat_calls` commits asynchronously (`synchronous_commit = off` for its own transaction only, as the
 * inline statement did: docs/messages.md "What a crash costs"); `gmg_record_chat_calls` commits synchronously.
 * A change to either statement is a new migration (CREATE OR REPLACE) and, while the previous release still runs,
 * keeps the arguments and the result's columns. Expand only: the previous release sends the statements inline.
 */
export class ChatCallFunctions1765760000000 implements MigrationInterface {
  name = 'ChatCallFunctions1765760000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION gmg_open_chat_calls(p_lease text, p_calls jsonb) RETURNS TABLE (out_active int, out_written int)
      LANGUAGE plpgsql AS $fn$
      BEGIN
        PERFORM set_config('synchronous_commit', 'off', true);
        RETURN QUERY WITH lease AS (
         SELECT id, account_id FROM credit_leases WHERE id = p_lease AND status = 'active' FOR SHARE
       ), x AS (
         SELECT * FROM jsonb_to_recordset(p_calls) AS x(id text, account_id uuid, api_key_id uuid, model text, requested_model text,
           price bigint, request jsonb, price_snapshot jsonb, started_at timestamptz)
       ), ins AS (
         INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, status, progress, request, price, price_snapshot,
                            result, created_at, started_at, deadline_at, lease_id)
         SELECT x.id, lease.account_id, x.api_key_id, x.model, x.requested_model, 'chat', 'processing', 0, x.request, x.price, x.price_snapshot,
                jsonb_build_object('cost_so_far', '0'), x.started_at, x.started_at, now() + interval '1 day', lease.id
           FROM x, lease WHERE x.account_id = lease.account_id
         ON CONFLICT (id) DO NOTHING RETURNING id
       )
       SELECT (SELECT count(*) FROM lease)::int AS active, (SELECT count(*) FROM ins)::int AS written;
      END
      $fn$`);
    await q.query(`
      CREATE OR REPLACE FUNCTION gmg_record_chat_calls(p_lease text, p_calls jsonb) RETURNS TABLE (out_active int)
      LANGUAGE plpgsql AS $fn$
      BEGIN
        RETURN QUERY WITH lease AS (
         SELECT id, account_id FROM credit_leases WHERE id = p_lease AND status = 'active' FOR UPDATE
       ), x AS (
         SELECT * FROM jsonb_to_recordset(p_calls) AS x(id text, account_id uuid, api_key_id uuid, model text, requested_model text,
           status text, price bigint, cost bigint, request jsonb, price_snapshot jsonb, result jsonb, error jsonb, channel_id uuid, started_at timestamptz)
       ), ins AS (
         -- a new row, or the call's open row (written before its first byte) moved to its end; a call already
         -- ended (recorded, or charged by the lease's close) is not returned, so not captured again
         INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, status, progress, request, price, price_snapshot,
                            result, error, channel_id, created_at, started_at, completed_at, settled_at, deadline_at, lease_id)
         SELECT x.id, lease.account_id, x.api_key_id, x.model, x.requested_model, 'chat', x.status, 100, x.request, x.price, x.price_snapshot,
                x.result, x.error, x.channel_id, x.started_at, x.started_at, now(), now(), now(), lease.id
           FROM x, lease WHERE x.account_id = lease.account_id
         ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, progress = 100, result = EXCLUDED.result, error = EXCLUDED.error,
                channel_id = EXCLUDED.channel_id, completed_at = now(), settled_at = now(), updated_at = now()
           WHERE tasks.status IN ('pending','processing') AND tasks.lease_id = EXCLUDED.lease_id
         RETURNING id, account_id
       ), cap AS (
         INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta)
         SELECT ins.account_id, ins.id, 'capture', x.cost, jsonb_build_object('lease', p_lease::text) FROM ins JOIN x ON x.id = ins.id
         ON CONFLICT (task_id, kind) DO NOTHING RETURNING amount
       ), total AS (
         SELECT COALESCE(sum(amount), 0)::bigint AS s FROM cap
       ), l AS (
         UPDATE credit_leases SET used = used + total.s FROM total, lease WHERE credit_leases.id = lease.id RETURNING credit_leases.id
       ), acc AS (
         UPDATE accounts SET held = held - total.s, spent = spent + total.s, updated_at = now()
           FROM total, lease WHERE accounts.id = lease.account_id AND total.s > 0 RETURNING accounts.id
       )
       SELECT (SELECT count(*) FROM l)::int AS active;
      END
      $fn$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS gmg_open_chat_calls(text, jsonb)`);
    await q.query(`DROP FUNCTION IF EXISTS gmg_record_chat_calls(text, jsonb)`);
  }
}
