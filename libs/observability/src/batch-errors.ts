import { batchErrors } from './metrics';

/** What a batch path needs of a logger: its warning line. */
export interface BatchLogger {
  warn(fields: Record<string, unknown>, msg: string): void;
}

/** The batch paths whose errors are told and not thrown (gmg_batch_errors_total's `batch` label; docs/operations.md). */
export type BatchPath =
  | 'hold'
  | 'hold_leased'
  | 'lease_renew'
  | 'lease_close'
  | 'poll_claim'
  | 'poll_rows'
  | 'poll_settle'
  | 'sweep_cursor'
  | 'settle_batch'
  | 'billing_settle_page'
  | 'billing_settle_task'
  | 'billing_webhooks'
  | 'idempotency_expiry'
  | 'retired_drain'
  | 'retention'
  | 'usage_rollup';

/**
 * A batch statement failed and its items go another way (one by one, again later, or left to expire): no answer is
 * lost, so the error is not thrown, but it is told — a line (the error's message and code only: a driver error
 * carries the statement's parameters, request bodies among them) and `gmg_batch_errors_total{batch}`.
 */
export function batchFailed(logger: BatchLogger | undefined, batch: BatchPath, err: unknown, fields: Record<string, unknown>, msg: string): void {
  batchErrors.inc({ batch });
  logger?.warn({ batch, ...fields, err: (err as Error | undefined)?.message, code: (err as { code?: unknown } | undefined)?.code }, msg);
}
