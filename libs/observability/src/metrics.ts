import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Every metric of the gateway, defined once. Each process registers all of them; a process exports only the series
 * it touched (a labelled metric with no observation prints no sample), so the edge, the workers and billing share
 * one vocabulary. Labels are bounded: model ids, channel names, pool and queue names, route patterns, statuses —
 * never a task id, key or raw path.
 */
export const registry = new Registry();

let processMetricsOn = false;
/** Process metrics (CPU, memory, GC, event-loop lag `nodejs_eventloop_lag_seconds`); once per process. */
export function collectProcessMetrics(service: string): void {
  if (processMetricsOn) return;
  processMetricsOn = true;
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const TASK_BUCKETS = [1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600];

export const httpRequests = new Counter({
  name: 'gmg_http_requests_total',
  help: 'HTTP requests answered, by method, Express route pattern and status code',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});

export const httpDuration = new Histogram({
  name: 'gmg_http_request_duration_seconds',
  help: 'HTTP request latency (first byte in to last byte out), by method and route pattern',
  labelNames: ['method', 'route'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const submits = new Counter({
  name: 'gmg_submits_total',
  help: 'Task submissions by model and outcome: accepted, payment_required (402), rate_limited (429), or the 4xx/5xx error type',
  labelNames: ['model', 'outcome'] as const,
  registers: [registry],
});

export const tasksFinished = new Counter({
  name: 'gmg_tasks_finished_total',
  help: 'Tasks that reached a terminal state, by pool, model and status (completed, failed)',
  labelNames: ['pool', 'model', 'status'] as const,
  registers: [registry],
});

export const taskDuration = new Histogram({
  name: 'gmg_task_duration_seconds',
  help: 'End-to-end task duration, submission to terminal state, by pool, model and status',
  labelNames: ['pool', 'model', 'status'] as const,
  buckets: TASK_BUCKETS,
  registers: [registry],
});

export const upstreamRequests = new Counter({
  name: 'gmg_upstream_requests_total',
  help: 'Calls to upstream channels by channel name, operation (submit, poll) and outcome (ok or the failure kind)',
  labelNames: ['channel', 'operation', 'outcome'] as const,
  registers: [registry],
});

export const upstreamDuration = new Histogram({
  name: 'gmg_upstream_request_duration_seconds',
  help: 'Upstream call latency by channel name and operation',
  labelNames: ['channel', 'operation'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const pollLateness = new Histogram({
  name: 'gmg_poll_lateness_seconds',
  help: 'How late a steady upstream poll started after it was due (claim time minus due time), by pool',
  labelNames: ['pool'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2, 5, 10, 30],
  registers: [registry],
});

export const sweeperActions = new Counter({
  name: 'gmg_sweeper_actions_total',
  help: 'Sweeper repairs by sweeper (a pool, or billing) and action (requeued, timed_out, resent, settled_late, webhook_resent)',
  labelNames: ['sweeper', 'action'] as const,
  registers: [registry],
});

export const sweeperLastRun = new Gauge({
  name: 'gmg_sweeper_last_run_timestamp_seconds',
  help: 'Unix time the sweeper last finished a run (one replica runs each sweep)',
  labelNames: ['sweeper'] as const,
  registers: [registry],
});

export const settlements = new Counter({
  name: 'gmg_settlements_total',
  help: 'Settlement attempts by outcome (captured, released, duplicate, not_found)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

/**
 * Batch statements that failed and whose items went another way (one by one, or left to expire): nothing is lost,
 * but a steady rate means a batch path that never works. `batch`: a BatchPath (batch-errors.ts).
 */
export const batchErrors = new Counter({
  name: 'gmg_batch_errors_total',
  help: 'Failed batch statements whose items were retried one by one, again later or left to expire, by batch (hold, hold_leased, lease_renew, lease_close, poll_claim, poll_rows, poll_settle, sweep_cursor)',
  labelNames: ['batch'] as const,
  registers: [registry],
});

/** Jobs not enqueued because their queue shard's backlog was at its cap (libs/queue BACKLOG_CAPS), by queue. */
export const backlogDeferred = new Counter({
  name: 'gmg_backlog_deferred_total',
  help: 'Jobs not enqueued because the queue shard held its cap of waiting and delayed jobs (Postgres keeps the work; the billing sweep sends it again), by queue',
  labelNames: ['queue'] as const,
  registers: [registry],
});

/** Vendor callbacks at the edge (issue 35 item 8), by outcome: accepted, forged, replayed, late, capped. */
export const upstreamCallbacks = new Counter({
  name: 'gmg_upstream_callbacks_total',
  help: 'Vendor callbacks received by outcome: accepted (the poll nudged), forged (bad, expired or malformed token), replayed, late (task not waiting), capped (too many)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

/** Large request bodies (≥ 256 KiB) at the edge's body budget (MAX_BODY_BYTES_IN_FLIGHT), by outcome. */
export const largeBodies = new Counter({
  name: 'gmg_large_bodies_total',
  help: 'Large request bodies at the body budget: admitted at once, admitted after waiting, refused (503) after waiting',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const largeBodyBytesInFlight = new Gauge({
  name: 'gmg_large_body_bytes_in_flight',
  help: 'Bytes of large request bodies the edge has admitted and not yet answered (bounded by MAX_BODY_BYTES_IN_FLIGHT)',
  registers: [registry],
});

export const largeBodiesWaiting = new Gauge({
  name: 'gmg_large_bodies_waiting',
  help: 'Large request bodies waiting, unread, for room in the body budget',
  registers: [registry],
});

export const resultStoreBytes = new Counter({
  name: 'gmg_result_store_bytes_total',
  help: "Bytes of finished tasks' files the workers kept in the result store (results kept by us), by kind (image, video)",
  labelNames: ['kind'] as const,
  registers: [registry],
});

/** Records one finished sweep: its repairs by action, and the time it ran (the "sweeper not running" alert). */
export function recordSweep(sweeper: string, actions: Readonly<Record<string, number>>): void {
  for (const [action, n] of Object.entries(actions)) if (n > 0) sweeperActions.inc({ sweeper, action }, n);
  sweeperLastRun.set({ sweeper }, Date.now() / 1000);
}

/** Records a task's terminal transition (only the winner of the conditional UPDATE calls it). */
export function recordTaskFinished(t: { pool: string; model: string; status: string; createdAt: Date; completedAt: Date | null }): void {
  const labels = { pool: t.pool, model: t.model, status: t.status };
  tasksFinished.inc(labels);
  const end = t.completedAt ?? new Date();
  taskDuration.observe(labels, Math.max(0, (end.getTime() - t.createdAt.getTime()) / 1000));
}
