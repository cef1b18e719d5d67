import { Gauge } from 'prom-client';
import { registry } from './metrics';

/** Runs `load` at most once per `ttlMs` (concurrent scrapes share one call); a failed load is retried next scrape. */
export function cached<T>(load: () => Promise<T>, ttlMs: number, now: () => number = Date.now): () => Promise<T> {
  let value: { at: number; p: Promise<T> } | undefined;
  return () => {
    if (value && now() - value.at < ttlMs) return value.p;
    const p = load();
    value = { at: now(), p };
    p.catch(() => {
      value = undefined;
    });
    return p;
  };
}

/** Per queue: job counts as BullMQ's getJobCounts answers them, and how long its oldest waiting job has waited. */
export type QueueCounts = Record<string, { counts: Record<string, number>; oldestWaitingSeconds: number }>;

const QUEUE_STATES = ['waiting', 'delayed', 'active', 'failed', 'prioritized', 'polling', 'polls_overdue'] as const;
let queueSource: (() => Promise<QueueCounts>) | undefined;

new Gauge({
  name: 'gmg_queue_jobs',
  help: 'Jobs per queue and state (waiting, delayed, active, failed, prioritized; a task queue also: polling = tasks on its poll path, polls_overdue = polls due and not claimed yet), read from Redis on scrape (cached briefly)',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
  async collect() {
    if (!queueSource) return;
    this.reset();
    for (const [queue, q] of Object.entries(await queueSource())) {
      for (const state of QUEUE_STATES) this.set({ queue, state }, q.counts[state] ?? 0);
    }
  },
});

new Gauge({
  name: 'gmg_queue_oldest_waiting_seconds',
  help: 'How long the oldest job in the wait list (or, for a task queue, the oldest overdue poll) has waited for a worker (0 when none); an upper bound for a resumed task job, which counts from its last step',
  labelNames: ['queue'] as const,
  registers: [registry],
  async collect() {
    if (!queueSource) return;
    this.reset();
    for (const [queue, q] of Object.entries(await queueSource())) this.set({ queue }, q.oldestWaitingSeconds);
  },
});

/** The process that reports queue depth (the edge: it holds a producer for every queue). */
export function reportQueueDepth(load: () => Promise<QueueCounts>, ttlMs = 5000): void {
  queueSource = cached(load, ttlMs);
}

/** What billing reads from Postgres on scrape: the unsettled backlog and the ledger's totals per kind. */
export interface MoneySnapshot {
  unsettled: number;
  /** Age of the oldest terminal task without capture/release; 0 when none. */
  oldestUnsettledSeconds: number;
  /** Sum of ledger entries per kind (hold, capture, release, topup, …), currency units. */
  ledgerUnits: Record<string, number>;
}

let moneySource: (() => Promise<MoneySnapshot>) | undefined;
const money = () => moneySource?.();

new Gauge({
  name: 'gmg_unsettled_tasks',
  help: 'Terminal tasks with neither capture nor release yet',
  registers: [registry],
  async collect() {
    const m = await money();
    if (m) this.set(m.unsettled);
  },
});

new Gauge({
  name: 'gmg_unsettled_oldest_age_seconds',
  help: 'Age of the oldest terminal task still unsettled (0 when none)',
  registers: [registry],
  async collect() {
    const m = await money();
    if (m) this.set(m.oldestUnsettledSeconds);
  },
});

new Gauge({
  name: 'gmg_ledger_units',
  help: 'Sum of all ledger entries per kind, in currency units (hold, capture, release, topup, adjustment, …)',
  labelNames: ['kind'] as const,
  registers: [registry],
  async collect() {
    const m = await money();
    if (!m) return;
    this.reset();
    for (const [kind, units] of Object.entries(m.ledgerUnits)) this.set({ kind }, units);
  },
});

/** The process that reports the backlog and the ledger (billing). */
export function reportMoney(load: () => Promise<MoneySnapshot>, ttlMs = 15_000): void {
  moneySource = cached(load, ttlMs);
}

/** 0 closed, 1 half-open, 2 open. */
const BREAKER_VALUE = { closed: 0, half_open: 1, open: 2 } as const;
type BreakerState = keyof typeof BREAKER_VALUE;
const breakers = new Map<string, () => BreakerState>();

new Gauge({
  name: 'gmg_circuit_breaker_state',
  help: 'Circuit breaker state per channel as this worker process sees it: 0 closed, 1 half-open, 2 open',
  labelNames: ['channel'] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const [channel, state] of breakers) this.set({ channel }, BREAKER_VALUE[state()]);
  },
});

/** Makes a channel's breaker visible (idempotent; called where a channel is picked, with its name). */
export function trackBreaker(breaker: { state(id: string): BreakerState }, ch: { id: string; name: string }): void {
  if (!breakers.has(ch.name)) breakers.set(ch.name, () => breaker.state(ch.id));
}

/** One channel (`key` null) or one of its keys (by id, never the secret) and its shared health status. */
export interface ChannelHealthSample {
  channel: string;
  key: string | null;
  status: string;
}
const HEALTH_STATUSES = ['active', 'cooling', 'disabled'] as const;
let healthSource: (() => Promise<ChannelHealthSample[]>) | undefined;

new Gauge({
  name: 'gmg_channel_health',
  help: 'Shared channel and key health (issue 37), read from Postgres on scrape (cached briefly): 1 for the current status (active, cooling, disabled), 0 for the others; key="" is the channel itself',
  labelNames: ['channel', 'key', 'status'] as const,
  registers: [registry],
  async collect() {
    if (!healthSource) return;
    this.reset();
    for (const s of await healthSource()) {
      for (const status of HEALTH_STATUSES) this.set({ channel: s.channel, key: s.key ?? '', status }, s.status === status ? 1 : 0);
    }
  },
});

/** The process that reports channel health (the workers: their probe keeps it). */
export function reportChannelHealth(load: () => Promise<ChannelHealthSample[]>, ttlMs = 5000): void {
  healthSource = cached(load, ttlMs);
}
