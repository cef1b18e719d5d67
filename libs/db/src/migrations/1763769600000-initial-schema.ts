import type { MigrationInterface, QueryRunner } from 'typeorm';

export class InitialSchema1763769600000 implements MigrationInterface {
  name = 'InitialSchema1763769600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS pgcrypto`);
    await q.query(`
      CREATE TABLE groups (
        name text PRIMARY KEY,
        price_ratio numeric(10,4) NOT NULL DEFAULT 1 CHECK (price_ratio > 0),
        models text[],
        rps_limit integer CHECK (rps_limit IS NULL OR rps_limit > 0),
        inflight_limit integer CHECK (inflight_limit IS NULL OR inflight_limit > 0),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`INSERT INTO groups (name) VALUES ('default')`);
    await q.query(`
      CREATE TABLE accounts (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL,
        group_name text NOT NULL DEFAULT 'default' REFERENCES groups(name) ON UPDATE CASCADE,
        available bigint NOT NULL DEFAULT 0 CHECK (available >= 0),
        held bigint NOT NULL DEFAULT 0 CHECK (held >= 0),
        spent bigint NOT NULL DEFAULT 0 CHECK (spent >= 0),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts(id),
        name text NOT NULL DEFAULT '',
        key_hash text NOT NULL UNIQUE,
        prefix text NOT NULL,
        models text[],
        group_name text REFERENCES groups(name) ON UPDATE CASCADE,
        rps_limit integer CHECK (rps_limit IS NULL OR rps_limit > 0),
        inflight_limit integer CHECK (inflight_limit IS NULL OR inflight_limit > 0),
        status text NOT NULL DEFAULT 'active' CHECK (status IN ('active','revoked')),
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
    await q.query(`CREATE INDEX api_keys_account_idx ON api_keys (account_id)`);
    await q.query(`
      CREATE TABLE channels (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL,
        protocol text NOT NULL DEFAULT 'gateway',
        base_url text NOT NULL,
        api_key text NOT NULL DEFAULT '',
        models text[],
        groups text[],
        priority integer NOT NULL DEFAULT 0,
        weight integer NOT NULL DEFAULT 1 CHECK (weight >= 0),
        enabled boolean NOT NULL DEFAULT true,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE prices (
        key text PRIMARY KEY,
        unit_price bigint NOT NULL CHECK (unit_price >= 0),
        description text NOT NULL DEFAULT '',
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE tasks (
        id text PRIMARY KEY CHECK (id LIKE 'task\\_%'),
        account_id uuid NOT NULL REFERENCES accounts(id),
        api_key_id uuid NOT NULL REFERENCES api_keys(id),
        model text NOT NULL,
        requested_model text NOT NULL,
        pool text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','processing','completed','failed')),
        progress integer NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
        request jsonb NOT NULL,
        price bigint NOT NULL CHECK (price >= 0),
        price_snapshot jsonb NOT NULL,
        channel_id uuid,
        upstream_task_id text,
        result jsonb,
        error jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        completed_at timestamptz,
        deadline_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX tasks_account_created_idx ON tasks (account_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX tasks_open_deadline_idx ON tasks (deadline_at) WHERE status IN ('pending','processing')`);
    await q.query(`CREATE INDEX tasks_key_open_idx ON tasks (api_key_id) WHERE status IN ('pending','processing')`);
    await q.query(`CREATE INDEX tasks_terminal_completed_idx ON tasks (completed_at) WHERE status IN ('completed','failed')`);
    await q.query(`
      CREATE TABLE ledger_entries (
        id bigserial PRIMARY KEY,
        account_id uuid NOT NULL REFERENCES accounts(id),
        task_id text,
        kind text NOT NULL CHECK (kind IN ('topup','hold','capture','release','adjustment')),
        amount bigint NOT NULL CHECK (amount >= 0),
        meta jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT ledger_task_kind_unique UNIQUE (task_id, kind)
      )`);
    await q.query(`CREATE INDEX ledger_account_created_idx ON ledger_entries (account_id, created_at DESC, id DESC)`);
    // Append-only: the ledger refuses UPDATE and DELETE.
    await q.query(`
      CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'ledger_entries is append-only'; END $$`);
    await q.query(`
      CREATE TRIGGER ledger_no_update BEFORE UPDATE OR DELETE ON ledger_entries
      FOR EACH ROW EXECUTE FUNCTION ledger_append_only()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS ledger_entries`);
    await q.query(`DROP FUNCTION IF EXISTS ledger_append_only()`);
    await q.query(`DROP TABLE IF EXISTS tasks`);
    await q.query(`DROP TABLE IF EXISTS prices`);
    await q.query(`DROP TABLE IF EXISTS channels`);
    await q.query(`DROP TABLE IF EXISTS api_keys`);
    await q.query(`DROP TABLE IF EXISTS accounts`);
    await q.query(`DROP TABLE IF EXISTS groups`);
  }
}
