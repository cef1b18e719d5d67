import type { DataSource } from 'typeorm';
import { DomainError } from '@gmg/errors';
import { rowsOf, type Row } from './sql';
import { keysJson, keysOf, toHealth, type ChannelKeySecret, type HealthRecord } from './channel-key.repository';

/** A messages-protocol call as it starts: a task row of pool `chat` with the hold of its most possible cost. */
export interface NewChatCall {
  id: string;
  accountId: string;
  apiKeyId: string;
  model: string;
  requestedModel: string;
  /** A small summary (model, max_tokens, stream, input estimate): never the conversation itself. */
  request: Record<string, unknown>;
  hold: bigint;
  priceSnapshot: Record<string, unknown>;
  /** Past it, a call still open (its edge died) is released in full by the chat sweeper. */
  deadlineAt: Date;
}

/** How a call ends. `cost` is clamped to the hold: a call is never charged more than it held. */
export interface ChatSettlement {
  status: 'completed' | 'failed';
  cost: bigint;
  /** Stored on the task (`result`): token usage, cost and the rule that priced it. */
  result: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  channelId: string | null;
}

export interface MessagesChannel {
  id: string;
  name: string;
  /** `messages`, or `openai` (chat completions: docs/upstreams/openai.md, "Chat"). */
  protocol: string;
  baseUrl: string;
  apiKey: string;
  versionHeader: string;
  priority: number;
  weight: number;
  /** The models it lists; null: every model. */
  models: string[] | null;
  /** Our model name → the vendor's (an `openai` channel's `model_map`; empty for `messages`). */
  modelMap: Record<string, string>;
  /** An `openai` channel's `settings.auth_header` (`api-key`: Azure-style resellers); else Bearer. */
  authHeader?: string;
  /** Its shared health and its keys (`[]`: `apiKey` is its one key); issue 37. */
  health: HealthRecord;
  keys: ChannelKeySecret[];
  /**
   * Its per-channel overrides (`settings.headers`, `body`, `proxy`, `timeouts`, `status_map`: @gmg/upstream's
   * channel-overrides.ts); absent when it sets none, so a plain channel costs the relay nothing.
   */
  overrides?: {
    headers?: Record<string, string>;
    body?: Record<string, unknown>;
    proxy?: string;
    timeouts?: { connect_ms?: number; request_ms?: number; poll_ms?: number };
    status_map?: Record<string, 'retry' | 'failover' | 'fail'>;
  };
}

/** A chat channel's overrides as one JSON object, NULL (nothing to parse) when its settings have none. */
const OVERRIDES_SQL = `CASE WHEN settings ?| array['headers','body','proxy','timeouts','status_map'] THEN jsonb_strip_nulls(jsonb_build_object(
  'headers', settings->'headers', 'body', settings->'body', 'proxy', settings->'proxy', 'timeouts', settings->'timeouts', 'status_map', settings->'status_map'
)) END AS overrides`;

/**
 * The money of chat calls: one statement at the start (conditional hold + task row + ledger `hold`) and one at
 * the end (terminal status + `capture` of the cost + `release` of the rest + the account move). The end statement
 * only acts on a call still open, and UNIQUE(task_id, kind) backs it up: a call is settled exactly once, whoever
 * (the edge that served it, or the sweeper after a crash) gets there first.
 */
export class ChatCallRepository {
  constructor(private readonly ds: DataSource) {}

  async open(c: NewChatCall): Promise<void> {
    const rows = rowsOf(
      await this.ds.query(
        `WITH hold AS (
         UPDATE accounts SET available = available - $7, held = held + $7, updated_at = now()
         WHERE id = $2 AND available >= $7 RETURNING id
       ), task AS (
         INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, status, progress, request,
                            price, price_snapshot, deadline_at, started_at)
         SELECT $1, $2, $3, $4, $5, 'chat', 'processing', 0, $6, $7, $8, $9, now() FROM hold
         RETURNING id
       ), ledger AS (
         INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta)
         SELECT $2, $1, 'hold', $7, $10 FROM hold RETURNING id
       )
       SELECT task.id FROM task, ledger`,
        [
          c.id,
          c.accountId,
          c.apiKeyId,
          c.model,
          c.requestedModel,
          JSON.stringify(c.request),
          c.hold.toString(),
          JSON.stringify(c.priceSnapshot),
          c.deadlineAt,
          JSON.stringify({ model: c.model }),
        ],
      ),
    );
    if (rows.length === 0) throw new DomainError('payment_required', 'Insufficient balance for this request');
  }

  /** True when this call settled it; false when it was settled already (nothing moved). */
  async settle(id: string, s: ChatSettlement): Promise<boolean> {
    if (s.cost < 0n) throw new Error('a charge is never negative');
    const rows = rowsOf(
      await this.ds.query(
        `WITH t AS (
         UPDATE tasks SET status = $2, progress = 100, result = $3, error = $4, channel_id = $5,
                completed_at = now(), settled_at = now(), updated_at = now()
         WHERE id = $1 AND pool = 'chat' AND status IN ('pending','processing')
         RETURNING account_id, price, LEAST(price, $6::bigint) AS cost
       ), cap AS (
         INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta)
         SELECT account_id, $1, 'capture', cost, $7 FROM t ON CONFLICT (task_id, kind) DO NOTHING RETURNING amount
       ), rel AS (
         INSERT INTO ledger_entries (account_id, task_id, kind, amount, meta)
         SELECT account_id, $1, 'release', price - cost, $7 FROM t ON CONFLICT (task_id, kind) DO NOTHING RETURNING amount
       ), acc AS (
         UPDATE accounts a SET held = a.held - t.price, spent = a.spent + t.cost, available = a.available + (t.price - t.cost),
                updated_at = now()
         FROM t WHERE a.id = t.account_id AND EXISTS (SELECT 1 FROM cap) AND EXISTS (SELECT 1 FROM rel)
         RETURNING a.id
       )
       SELECT id FROM acc`,
        [
          id,
          s.status,
          s.result ? JSON.stringify(s.result) : null,
          s.error ? JSON.stringify(s.error) : null,
          s.channelId,
          s.cost.toString(),
          JSON.stringify({ kind: 'chat' }),
        ],
      ),
    );
    return rows.length > 0;
  }

  /** Chat calls still open past their deadline: their edge died (or hung) before settling. */
  async findOverdue(limit = 200): Promise<string[]> {
    const rows: Row[] = await this.ds.query(
      `SELECT id FROM tasks WHERE pool = 'chat' AND lease_id IS NULL AND status IN ('pending','processing') AND deadline_at < now()
       ORDER BY deadline_at LIMIT $1`,
      [limit],
    );
    return rows.map((r) => r.id as string);
  }

  /**
   * Enabled chat channels serving this model for this group (null lists mean "all"): `messages` channels, and
   * `openai` channels that list the model by name (an `openai` channel listing no models is a media channel).
   */
  async channels(model: string, group: string): Promise<MessagesChannel[]> {
    const rows: Row[] = await this.ds.query(
      `SELECT id, name, protocol, base_url, api_key, version_header, priority, weight, models, model_map, settings->>'auth_header' AS auth_header,
         ${OVERRIDES_SQL}, status, cooling_until, disabled_reason, last_error, last_error_at, ${keysJson(true)}
       FROM channels c
       WHERE enabled AND (groups IS NULL OR $2 = ANY(groups))
         AND ((protocol = 'messages' AND (models IS NULL OR $1 = ANY(models))) OR (protocol = 'openai' AND $1 = ANY(models)))
       ORDER BY priority DESC, id`,
      [model, group],
    );
    return rows.map((r) => ({
      id: r.id as string,
      name: r.name as string,
      protocol: r.protocol as string,
      baseUrl: r.base_url as string,
      apiKey: r.api_key as string,
      versionHeader: r.version_header as string,
      priority: Number(r.priority),
      weight: Number(r.weight),
      models: (r.models as string[] | null) ?? null,
      modelMap: (r.model_map as Record<string, string> | null) ?? {},
      ...(typeof r.auth_header === 'string' ? { authHeader: r.auth_header } : {}),
      ...(r.overrides ? { overrides: r.overrides as MessagesChannel['overrides'] } : {}),
      health: toHealth(r),
      keys: keysOf(r),
    }));
  }
}
