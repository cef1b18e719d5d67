import type { DataSource } from 'typeorm';
import { rowsOf, type Row } from './sql';

/** How long a set-aside channel or key waits before its next trial: `baseMs` × 2^(failed trials), at most `maxMs`. */
export interface BackOff {
  baseMs: number;
  maxMs: number;
}

/** What the probe claimed: a key (with the channel it belongs to) or a channel (tried with its best key). */
export interface ProbeClaim {
  scope: 'key' | 'channel';
  /** The key's id (scope key) or the channel's id (scope channel). */
  id: string;
  channelId: string;
}

/** One row of the health metric: a channel (`key` null) or one of its keys, and its status. */
export interface HealthSample {
  channel: string;
  key: string | null;
  status: string;
}

const MAX_ERROR = 500;
const clip = (s: string): string => (s.length <= MAX_ERROR ? s : `${s.slice(0, MAX_ERROR)}…`);
/** `now()` plus the back-off of a row whose failed trials so far are `level` (a SQL expression). */
const after = (level: string): string => `now() + make_interval(secs => LEAST($max::float8, $base::float8 * power(2, LEAST(${level}, 30))) / 1000.0)`;
const bind = (sql: string, b: BackOff, first: number): { sql: string; params: number[] } => ({
  sql: sql
    .split('$base')
    .join(`$${first}`)
    .split('$max')
    .join(`$${first + 1}`),
  params: [b.baseMs, b.maxMs],
});

/**
 * Channel and key health in Postgres (issue 37 item 2): shared by every replica, kept across restarts. Writes happen
 * on transitions only (a refusal, a rate limit, a channel's circuit opening, a trial's outcome), never per call.
 */
export class ChannelHealthRepository {
  constructor(
    private readonly ds: DataSource,
    private readonly backOff: BackOff = { baseMs: 30_000, maxMs: 15 * 60_000 },
  ) {}

  /** The vendor refused the key (credentials, balance): set aside at once with its message; the probe tries it again. */
  async keyRefused(keyId: string, message: string): Promise<void> {
    const { sql, params } = bind(
      `UPDATE channel_keys SET status = 'disabled', disabled_reason = $2, last_error = $2, last_error_at = now(), cooling_until = NULL,
         next_probe_at = ${after('cool_level')}, updated_at = now()
       WHERE id = $1 AND status <> 'disabled'`,
      this.backOff,
      3,
    );
    await this.ds.query(sql, [keyId, clip(message), ...params]);
  }

  /** The vendor rate-limited the key: it cools until the vendor's time (or the base back-off) and then takes traffic again. */
  async keyRateLimited(keyId: string, message: string, retryAfterMs: number | undefined): Promise<void> {
    await this.ds.query(
      `UPDATE channel_keys SET status = 'cooling', cooling_until = now() + make_interval(secs => $3::float8 / 1000.0), last_error = $2,
         last_error_at = now(), updated_at = now()
       WHERE id = $1 AND status <> 'disabled'`,
      [keyId, clip(message), retryAfterMs ?? this.backOff.baseMs],
    );
  }

  /** A call with a key that was not `active` (a rate limit past its time) succeeded: active again. */
  async keyBack(keyId: string): Promise<void> {
    await this.ds.query(
      `UPDATE channel_keys SET status = 'active', cooling_until = NULL, disabled_reason = NULL, cool_level = 0, next_probe_at = NULL, updated_at = now()
       WHERE id = $1 AND status <> 'active'`,
      [keyId],
    );
  }

  /**
   * A channel set aside: `cooling` (it keeps failing: the back-off grows with each failed trial) or `disabled` (its
   * one key refused). Either way only the probe brings it back.
   */
  async channelDown(channelId: string, status: 'cooling' | 'disabled', message: string): Promise<void> {
    const { sql, params } = bind(
      `UPDATE channels SET status = $2, last_error = $3, last_error_at = now(),
         disabled_reason = CASE WHEN $2 = 'disabled' THEN $3 ELSE NULL END,
         cooling_until = CASE WHEN $2 = 'cooling' THEN ${after('cool_level')} ELSE NULL END,
         next_probe_at = ${after('cool_level')}
       WHERE id = $1 AND status = 'active'`,
      this.backOff,
      4,
    );
    await this.ds.query(sql, [channelId, status, clip(message), ...params]);
  }

  /**
   * Claims the next due trial, fleet-wide at most one per row at a time: the row is locked (SKIP LOCKED: a racing
   * replica takes the next one or none) and its `next_probe_at` pushed past `leaseMs`, so until the trial reports
   * (or the lease runs out after a crash) no one else claims it. Disabled keys of disabled channels are tried too, and a
   * rate-limited key past its time that no call has used since (so its record says `active` again without traffic).
   */
  async claimDue(leaseMs: number): Promise<ProbeClaim | null> {
    const key = rowsOf(
      await this.ds.query(
        `UPDATE channel_keys k SET next_probe_at = now() + make_interval(secs => $1::float8 / 1000.0)
         FROM (SELECT id FROM channel_keys
               WHERE (status = 'disabled' AND next_probe_at <= now())
                  OR (status = 'cooling' AND cooling_until <= now() AND (next_probe_at IS NULL OR next_probe_at <= now()))
               ORDER BY COALESCE(next_probe_at, cooling_until) LIMIT 1 FOR UPDATE SKIP LOCKED) due
         WHERE k.id = due.id RETURNING k.id, k.channel_id`,
        [leaseMs],
      ),
    );
    if (key[0]) return { scope: 'key', id: key[0].id as string, channelId: key[0].channel_id as string };
    const ch = rowsOf(
      await this.ds.query(
        `UPDATE channels c SET next_probe_at = now() + make_interval(secs => $1::float8 / 1000.0)
         FROM (SELECT id FROM channels WHERE enabled AND status <> 'active' AND next_probe_at <= now()
               ORDER BY next_probe_at LIMIT 1 FOR UPDATE SKIP LOCKED) due
         WHERE c.id = due.id RETURNING c.id`,
        [leaseMs],
      ),
    );
    return ch[0] ? { scope: 'channel', id: ch[0].id as string, channelId: ch[0].id as string } : null;
  }

  /**
   * A trial's outcome. `ok`: active again, its back-off reset. Otherwise it stays set aside (a refused key with the
   * vendor's new message) and its next trial waits one back-off step longer.
   */
  async trialDone(claim: ProbeClaim, ok: boolean, message?: string): Promise<void> {
    const table = claim.scope === 'key' ? 'channel_keys' : 'channels';
    if (ok) {
      await this.ds.query(
        `UPDATE ${table} SET status = 'active', cooling_until = NULL, disabled_reason = NULL, cool_level = 0, next_probe_at = NULL WHERE id = $1`,
        [claim.id],
      );
      return;
    }
    const { sql, params } = bind(
      `UPDATE ${table} SET cool_level = cool_level + 1, last_error = COALESCE($2, last_error), last_error_at = now(),
         disabled_reason = CASE WHEN status = 'disabled' THEN COALESCE($2, disabled_reason) ELSE NULL END,
         cooling_until = CASE WHEN status = 'cooling' THEN ${after('cool_level + 1')} ELSE NULL END,
         next_probe_at = ${after('cool_level + 1')}
       WHERE id = $1 AND status <> 'active'`,
      this.backOff,
      3,
    );
    await this.ds.query(sql, [claim.id, message === undefined ? null : clip(message), ...params]);
  }

  /** Every channel's and key's status, for the health metric (channels by name; keys by id: never a secret). */
  async snapshot(): Promise<HealthSample[]> {
    const rows: Row[] = await this.ds.query(
      `SELECT c.name AS channel, NULL::text AS key, c.status FROM channels c WHERE c.enabled
       UNION ALL
       SELECT c.name, k.id::text, k.status FROM channel_keys k JOIN channels c ON c.id = k.channel_id WHERE c.enabled`,
    );
    return rows.map((r) => ({ channel: r.channel as string, key: (r.key as string | null) ?? null, status: r.status as string }));
  }
}
