/**
 * Issue 12, traces and metrics with every part real: api-edge, worker-image and billing as separate processes,
 * the upstream simulator, real Postgres and Redis, and a local OTLP/HTTP collector (an HTTP server this test starts)
 * that receives the services' JSON exports.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { QUEUES } from '@gmg/contracts';
import { ApiKeyRepository, AccountRepository } from '@gmg/db';
import { startSimStack, waitFor, type SimStack, type TestDatabase } from '@gmg/testing';

const ADMIN_TOKEN = 'e2e-admin-token-observability-0123';

interface ExportedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
}

/** An OTLP/HTTP receiver: collects every span of every POST /v1/traces (OTLP JSON encoding). */
async function startCollector(): Promise<{ url: string; spans: ExportedSpan[]; close(): Promise<void> }> {
  const spans: ExportedSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as any;
        for (const rs of body.resourceSpans ?? []) {
          const service = rs.resource?.attributes?.find((a: any) => a.key === 'service.name')?.value?.stringValue as string;
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? [])
              spans.push({ service, traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId || undefined, name: s.name });
          }
        }
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The value of one sample in a Prometheus text exposition, or undefined when the series is absent. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const m = /^[^{ ]+(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const got = Object.fromEntries([...(m[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[2]);
  }
  return undefined;
}

describe('observability e2e: one trace from the edge to billing, and the metrics that count it', () => {
  let stack: SimStack;
  let db: TestDatabase;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let base: string;
  let workerMetrics: string;
  let billingMetrics: string;
  let key: string;

  const submit = (body: unknown) =>
    fetch(`${base}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const text = async (url: string, headers: Record<string, string> = {}) => (await fetch(url, { headers })).text();
  const waitTerminal = (id: string) =>
    waitFor(
      async () => {
        const r = await fetch(`${base}/v1/tasks/${id}`, { headers: { authorization: `Bearer ${key}` } });
        const t = ((await r.json()) as any).data;
        return ['completed', 'failed'].includes(t?.status) ? t : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 100, what: `task ${id} to end` },
    );

  beforeAll(async () => {
    collector = await startCollector();
    stack = await startSimStack({
      database: 'gmg_e2e_obs',
      timeScale: '0.2',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url },
      channel: { name: 'sim-obs' },
    });
    db = stack.db;
    const [edge, worker, billing] = await Promise.all([
      stack.start('api-edge', { ADMIN_TOKEN }),
      stack.start('worker-image', { POLL_INTERVAL_SCALE: '0.1', SWEEP_INTERVAL_MS: '1000' }),
      stack.start('billing', { SWEEP_INTERVAL_MS: '1000' }),
    ]);
    base = edge.url;
    workerMetrics = `${worker.url}/metrics`;
    billingMetrics = `${billing.url}/metrics`;
    const account = await new AccountRepository(db.dataSource).create({ name: 'obs' });
    await new AccountRepository(db.dataSource).topup(account.id, 1_000_000_000n);
    key = (await new ApiKeyRepository(db.dataSource).create({ accountId: account.id })).secret;
  });

  afterAll(async () => {
    await stack?.stop();
    await collector?.close();
  });

  it('exports edge → queue → worker steps → upstream → billing as ONE trace, linked parent to child', async () => {
    const r = await submit({ model: 'lumen-2-pro', prompt: 'a traced lighthouse', size: '1:1', resolution: '1MP' });
    expect(r.status).toBe(200);
    const traceId = r.headers.get('x-trace-id')!;
    const requestId = r.headers.get('x-request-id')!;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    const id = ((await r.json()) as any).data[0].task_id as string;
    expect((await waitTerminal(id)).status).toBe('completed');

    const names = [
      'POST /v1/images/generations',
      'enqueue task',
      'task submit',
      'upstream submit',
      'task poll',
      'upstream poll',
      'enqueue settle',
      'billing settle',
    ];
    const spans = await waitFor(
      () => {
        const mine = collector.spans.filter((s) => s.traceId === traceId);
        return names.every((n) => mine.some((s) => s.name === n)) ? mine : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 200, what: 'every span of the task in the collector' },
    );

    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const parentOf = (s: ExportedSpan) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);
    const one = (name: string) => spans.find((s) => s.name === name)!;
    const server = one('POST /v1/images/generations');
    expect(server.parentSpanId).toBeUndefined();
    expect(server.service).toBe('api-edge');
    expect(parentOf(one('enqueue task'))).toBe(server);
    // every worker step continues the trace carried in the job data, under the enqueue span
    for (const step of spans.filter((s) => s.name === 'task submit' || s.name === 'task poll')) {
      expect(step.service).toBe('worker-image');
      expect(parentOf(step)).toBe(one('enqueue task'));
    }
    expect(parentOf(one('upstream submit'))?.name).toBe('task submit');
    expect(parentOf(one('upstream poll'))?.name).toBe('task poll');
    expect(parentOf(one('enqueue settle'))?.name).toBe('task poll');
    expect(one('billing settle').service).toBe('billing');
    expect(parentOf(one('billing settle'))).toBe(one('enqueue settle'));
    // nothing of this trace is orphaned
    for (const s of spans) if (s !== server) expect(parentOf(s)).toBeDefined();

    // a support request quoting either id finds the task
    const lookup = async (q: string) => {
      const res = await fetch(`${base}/api/tasks?${q}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      return { status: res.status, body: (await res.json()) as any };
    };
    for (const q of [`trace_id=${traceId}`, `request_id=${requestId}`]) {
      const found = await lookup(q);
      expect(found.status).toBe(200);
      expect(found.body.data).toEqual([expect.objectContaining({ task_id: id, request_id: requestId, trace_id: traceId, status: 'completed' })]);
    }
    expect((await lookup('trace_id=nothex')).status).toBe(400);
  });

  it('counts what happened on the edge, the worker and billing /metrics; the edge wants the admin token', async () => {
    const before = {
      edge: await text(`${base}/metrics`, { authorization: `Bearer ${ADMIN_TOKEN}` }),
      worker: await text(workerMetrics),
      billing: await text(billingMetrics),
    };
    const ok = await submit({ model: 'lumen-2-flex', prompt: 'counted' });
    const failed = await submit({ model: 'lumen-2-flex', prompt: 'counted [sim:fail]' });
    const bad = await submit({ model: 'lumen-2-flex' }); // no prompt
    expect([ok.status, failed.status, bad.status]).toEqual([200, 200, 400]);
    const [okTask, failedTask] = await Promise.all([ok, failed].map(async (r) => waitTerminal(((await r.json()) as any).data[0].task_id)));
    expect([okTask.status, failedTask.status]).toEqual(['completed', 'failed']);

    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    expect((await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer wrong-token-wrong-token-0000' } })).status).toBe(401);
    const delta = (t0: string, t1: string, name: string, labels: Record<string, string>) => (sample(t1, name, labels) ?? 0) - (sample(t0, name, labels) ?? 0);

    const edge = await text(`${base}/metrics`, { authorization: `Bearer ${ADMIN_TOKEN}` });
    expect(delta(before.edge, edge, 'gmg_submits_total', { model: 'lumen-2-flex', outcome: 'accepted' })).toBe(2);
    expect(delta(before.edge, edge, 'gmg_submits_total', { model: 'lumen-2-flex', outcome: 'invalid_request_error' })).toBe(1);
    expect(delta(before.edge, edge, 'gmg_http_requests_total', { method: 'POST', route: '/v1/images/generations', status: '200' })).toBe(2);
    // route patterns, never raw paths: task polls are one series
    expect(sample(edge, 'gmg_http_requests_total', { method: 'GET', route: '/v1/tasks/:id', status: '200' })).toBeGreaterThan(0);
    expect(edge).not.toMatch(/route="\/v1\/tasks\/task_/);
    expect(sample(edge, 'gmg_queue_jobs', { queue: QUEUES.image, state: 'waiting' })).toBeDefined();
    expect(sample(edge, 'gmg_queue_oldest_waiting_seconds', { queue: QUEUES.billing })).toBeGreaterThanOrEqual(0);
    expect(edge).toMatch(/^nodejs_eventloop_lag_seconds\{service="api-edge"\} /m);

    const worker = await waitFor(
      async () => {
        const t = await text(workerMetrics);
        return delta(before.worker, t, 'gmg_tasks_finished_total', { pool: 'image', model: 'lumen-2-flex', status: 'failed' }) === 1 ? t : undefined;
      },
      { timeoutMs: 5000, what: 'worker counters' },
    );
    expect(delta(before.worker, worker, 'gmg_tasks_finished_total', { pool: 'image', model: 'lumen-2-flex', status: 'completed' })).toBe(1);
    expect(delta(before.worker, worker, 'gmg_upstream_requests_total', { channel: 'sim-obs', operation: 'submit', outcome: 'ok' })).toBe(2);
    expect(sample(worker, 'gmg_circuit_breaker_state', { channel: 'sim-obs' })).toBe(0);
    expect(sample(worker, 'gmg_task_duration_seconds_count', { pool: 'image', model: 'lumen-2-flex', status: 'completed' })).toBeGreaterThan(0);

    const billing = await waitFor(
      async () => {
        const t = await text(billingMetrics);
        return delta(before.billing, t, 'gmg_settlements_total', { outcome: 'released' }) === 1 ? t : undefined;
      },
      { timeoutMs: 5000, what: 'billing counters' },
    );
    expect(delta(before.billing, billing, 'gmg_settlements_total', { outcome: 'captured' })).toBe(1);
    expect(sample(billing, 'gmg_ledger_units', { kind: 'hold' })).toBeGreaterThan(0);
    expect(sample(billing, 'gmg_unsettled_tasks', {})).toBeDefined();
  });
});
