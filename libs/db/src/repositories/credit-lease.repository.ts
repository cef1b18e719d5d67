import type { DataSource, EntityManager } from 'typeorm';
import { rowsOf, type Row } from './sql';

/** A finished chat call paid from a lease, as the batch writes it (its task row and its capture). */
export interface LeasedCall {
  id: string;
  accountId: string;
  apiKeyId: string;
  model: string;
  requestedModel: string;
  status: 'completed' | 'failed';
  /** What was reserved for it (its price on the task row): the most it could cost. */
  reserved: bigint;
  /** What it costs; never above `reserved`. */
  cost: bigint;
  request: Record<string, unknown>;
  priceSnapshot: Record<string, unknown>;
  result: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  channelId: string | null;
  startedAt: Date;
}

/** A chat call as it starts on a lease: written before its first byte reaches the client. */
export type OpenedCall = Pick<
  LeasedCall,
  'id' | 'accountId' | 'apiKeyId' | 'model' | 'requestedModel' | 'reserved' | 'request' | 'priceSnapshot' | 'startedAt'
>;

/** A call's columns as the statements below read them (jsonb_to_recordset): what it has from its start. */
export const openedRow = (c: OpenedCall) => ({
  id: c.id,
  account_id: c.accountId,
  api_key_id: c.apiKeyId,
  model: c.model,
  requested_model: c.requestedModel,
  price: c.reserved.toString(),
  request: c.request,
  price_snapshot: c.priceSnapshot,
  started_at: c.startedAt.toISOString(),
});

/** A finished call's columns as the statements below read them. */
export const recordedRow = (c: LeasedCall) => ({
  ...openedRow(c),
  status: c.status,
  cost: (c.cost < c.reserved ? c.cost : c.reserved).toString(),
  result: c.result,
  error: c.error,
  channel_id: c.channelId,
});

export interface LeaseGrant {
  id: string;
  amount: bigint;
  expiresAt: Date;
}

/**
 * Credit leases (docs/messages.md): the money path of chat calls without a Postgres round trip before the first
 * byte. Every statement here is one round trip and atomic; the invariants (never below zero, a call captured once,
 * a lease released once, `hold = Σ captures + release` per closed lease) hold whatever runs concurrently:
 * grant, record (flush), renew, close, and any number of sweepers.
 */
export class CreditLeaseRepository {
  constructor(private readonly ds: DataSource) {}

  /**
   * Holds up to `want` (at least `min`, else nothing: null) of the account's available money as a new lease: the
   * account row locked and its grant computed first, then one statement for the account move, the lease row and the
   * ledger `hold` on the lease id. Two statements in one transaction, not one: a grant computed in the same
   * statement as the move raced a concurrent hold of the account (its `LEAST(available, want)` came from the version
   * before that hold, and the move then broke `available >= 0`: a CHECK error instead of a lease). Grants are one per
   * lease, so the extra round trip does not matter.
   */
  async grant(g: { id: string; accountId: string; edgeId: string; min: bigint; want: bigint; ttlMs: number }): Promise<LeaseGrant | null> {
    return this.ds.transaction(async (m: EntityManager) => {
      const [a] = rowsOf(
        await m.query(`SELECT LEAST(available, $3::bigint)::text AS g FROM accounts WHERE id = $1 AND available >= $2::bigint FOR UPDATE`, [
          g.accountId,
          g.min.toString(),
          g.want.toString(),
        ]),
      );
      if (!a) return null;
      const rows = rowsOf(
        await m.query(
          `WITH acc AS (
           UPDATE accounts SET available = available - $4::bigint, held = held + $4::bigint, updated_at = now() WHERE id = $2 RETURNING id
         ), lease AS (
           INSERT INTO credit_leases (id, account_id, edge_id, amount, expires_at)
           SELECT $1, $2, $3, $4::bigint, now() + ($5 || ' milliseconds')::interval FROM acc RETURNING amount, expires_at
         ), led AS (
           INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta)
           SELECT $2, $1, 'hold', amount, $6 FROM lease RETURNING id
         )
         SELECT lease.amount::text AS amount, lease.expires_at FROM lease, led`,
          [g.id, g.accountId, g.edgeId, a.g as string, String(g.ttlMs), JSON.stringify({ kind: 'credit_lease', edge: g.edgeId })],
        ),
      );
      const r = rows[0];
      return r ? { id: g.id, amount: BigInt(r.amount as string), expiresAt: new Date(r.expires_at as string) } : null;
    });
  }

  /**
   * Records finished calls paid by an active lease: their task rows and `capture` entries, the lease's `used` and
   * the account's held → spent, in one statement. A call already recorded is skipped (a retried batch charges
   * nothing twice). Returns false, recording nothing, when the lease is no longer active (the caller charges
   * those calls another way). The statement is the function `gmg_record_chat_calls` (migration
   * 1765760000000-chat-call-functions: its plan is cached per server connection instead of planned per call).
   * The previous release's statement (the edge now sends `write`): kept while that release may still call it, and
   * for the tests that prove it keeps the invariants next to `write` (credit-lease.property.int.test.ts).
   */
  async record(leaseId: string, calls: readonly LeasedCall[]): Promise<boolean> {
    const input = calls.map(recordedRow);
    const rows = rowsOf(await this.ds.query(`SELECT out_active AS active FROM gmg_record_chat_calls($1, $2::jsonb)`, [leaseId, JSON.stringify(input)]));
    return Number(rows[0]?.active ?? 0) > 0;
  }

  /** Extends the leases an edge still uses; returns the ids still active (a missing one was closed by a sweeper). */
  async renew(ids: readonly string[], ttlMs: number): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = rowsOf(
      await this.ds.query(
        `UPDATE credit_leases SET expires_at = now() + ($2 || ' milliseconds')::interval
       WHERE id = ANY($1) AND status = 'active' RETURNING id`,
        [ids, String(ttlMs)],
      ),
    );
    return new Set(rows.map((r) => r.id as string));
  }

  /**
   * The edge's one statement per lease: the calls started (`opens`: status `processing`, the lease id, the
   * reservation as price; no money moves, the lease holds it) and the calls finished (`records`, as `record`) of one
   * lease, in one transaction, only while the lease is active (`active` false: nothing written). `written` is how
   * many open rows it inserted. A call in both is written once and captured once (the record moves the row the open
   * part just wrote); the book sends such a call only as a record.
   *
   * The function `gmg_write_chat_calls` (migration 1766000000000-chat-call-write; its plan is cached per server
   * connection) commits synchronously as soon as it carries a record (money moves), and asynchronously while it
   * carries only open rows (`synchronous_commit = off` for its own transaction only, through `set_config(…, true)`:
   * one round trip, safe under PgBouncer's transaction pooling): the row is visible to every session at once, so a
   * kill of the edge is covered, but the first byte of a chat answer does not wait for the WAL flush (issue 36 item
   * 3; docs/messages.md "What a crash costs"). A crash of Postgres itself can lose the open rows of the last ≤ 3 ×
   * wal_writer_delay (600 ms by default); the edge then writes the call again with its record (a missing row is
   * inserted), so the call is still charged once. Only when the edge dies too before that is a lost call left
   * uncharged (the lease's close releases its reservation): money of ours, never the client's, bounded by the calls
   * opened in that window (test/chaos/postgres-crash.int.test.ts). The previous release's two statements
   * (`gmg_open_chat_calls`, `gmg_record_chat_calls`) stay in the database while it may still run.
   */
  async write(leaseId: string, opens: readonly OpenedCall[], records: readonly LeasedCall[]): Promise<{ active: boolean; written: number }> {
    const rows = rowsOf(
      await this.ds.query(`SELECT out_active AS active, out_written AS written FROM gmg_write_chat_calls($1, $2::jsonb, $3::jsonb)`, [
        leaseId,
        JSON.stringify(opens.map(openedRow)),
        JSON.stringify(records.map(recordedRow)),
      ]),
    );
    return { active: Number(rows[0]?.active ?? 0) > 0, written: Number(rows[0]?.written ?? 0) };
  }

  /** The cost so far of calls still running (what a crash charges them); ignores calls already ended. */
  async journal(updates: ReadonlyArray<{ id: string; costSoFar: bigint }>): Promise<void> {
    if (updates.length === 0) return;
    await this.ds.query(
      `UPDATE tasks t SET result = jsonb_build_object('cost_so_far', u.cost), updated_at = now()
         FROM jsonb_to_recordset($1::jsonb) AS u(id text, cost text)
        WHERE t.id = u.id AND t.status IN ('pending','processing') AND t.lease_id IS NOT NULL`,
      [JSON.stringify(updates.map((u) => ({ id: u.id, cost: u.costSoFar.toString() })))],
    );
  }

  /**
   * Closes a lease once. The calls still open on it (their edge died mid-call) are charged what they journalled
   * (never above their reservation) and end `failed` (`charge_rule: edge_lost`); then `amount - used` goes back to
   * the account (ledger `release` on the lease id). Null when it was closed already.
   */
  async close(id: string): Promise<bigint | null> {
    const rows = rowsOf(
      await this.ds.query(
        `WITH l AS (
         SELECT id, account_id FROM credit_leases WHERE id = $1 AND status = 'active' FOR UPDATE
       ), open AS (
         UPDATE tasks t SET status = 'failed', progress = 100, completed_at = now(), settled_at = now(), updated_at = now(),
                error = '{"code":"task_failed","message":"The gateway process serving this call stopped before its end"}'::jsonb,
                result = jsonb_build_object('charge_rule', 'edge_lost', 'reason', 'edge_lost',
                           'cost', LEAST(t.price, COALESCE((t.result->>'cost_so_far')::bigint, 0))::text)
           FROM l WHERE t.lease_id = l.id AND t.status IN ('pending','processing')
         -- RETURNING sees the new row: the cost is the one just written into result
         RETURNING t.id, t.account_id, (t.result->>'cost')::bigint AS cost
       ), cap AS (
         INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta)
         SELECT account_id, id, 'capture', cost, jsonb_build_object('lease', $1::text, 'edge_lost', true) FROM open
         ON CONFLICT (task_id, kind) DO NOTHING RETURNING amount
       ), total AS (
         SELECT COALESCE(sum(amount), 0)::bigint AS s FROM cap
       ), c AS (
         UPDATE credit_leases SET status = 'closed', closed_at = now(), used = used + total.s FROM l, total
          WHERE credit_leases.id = l.id RETURNING credit_leases.account_id, credit_leases.amount - credit_leases.used AS rest, total.s AS charged
       ), rel AS (
         INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta)
         SELECT account_id, $1, 'release', rest, $2 FROM c ON CONFLICT (task_id, kind) DO NOTHING RETURNING amount
       ), acc AS (
         UPDATE accounts SET held = held - rel.amount - c.charged, available = available + rel.amount, spent = spent + c.charged, updated_at = now()
           FROM rel, c WHERE accounts.id = c.account_id RETURNING accounts.id
       )
       SELECT rest::text AS rest FROM c, acc`,
        [id, JSON.stringify({ kind: 'credit_lease' })],
      ),
    );
    return rows[0] ? BigInt(rows[0].rest as string) : null;
  }

  /** Active leases past their expiry: their edge stopped renewing them (dead, or cut off from Postgres). */
  async findExpired(limit = 200): Promise<string[]> {
    const rows: Row[] = await this.ds.query(`SELECT id FROM credit_leases WHERE status = 'active' AND expires_at < now() ORDER BY expires_at LIMIT $1`, [
      limit,
    ]);
    return rows.map((r) => r.id as string);
  }
}
