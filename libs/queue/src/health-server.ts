import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { renderMetrics } from '@gmg/observability';
import { evaluateReadiness, type ReadinessOptions } from './readiness';

export interface HealthServerOptions extends Omit<ReadinessOptions, 'timeoutMs'> {
  port: number;
  host?: string;
  checkTimeoutMs?: number;
  /**
   * Liveness: can this process still do its job? Each answers synchronously; /healthz is 503 naming the ones that
   * say no (a BullMQ worker that stopped running, a Redis client that gave up reconnecting) and the orchestrator
   * restarts the process. Never a shared dependency: a Postgres outage must not restart every pod.
   */
  liveness?: Record<string, () => boolean>;
}

/** The /healthz answer: 200 when every liveness check holds. */
export function evaluateLiveness(liveness: Record<string, () => boolean> = {}): { status: 200 | 503; body: { status: 'ok' | 'failing'; failing?: string[] } } {
  const failing = Object.entries(liveness)
    .filter(([, alive]) => {
      try {
        return !alive();
      } catch {
        return true;
      }
    })
    .map(([name]) => name);
  return failing.length ? { status: 503, body: { status: 'failing', failing } } : { status: 200, body: { status: 'ok' } };
}

export interface HealthServer {
  port: number;
  close(): Promise<void>;
}

/**
 * The health port of a queue consumer (workers, billing): GET /healthz, the process can do its job; GET /readyz, the
 * shared readiness rule (evaluateReadiness) — the same answer the edge gives on its own port; GET /metrics, the
 * process's Prometheus metrics (unauthenticated: the health port is cluster-internal, never published).
 */
export async function startHealthServer(opts: HealthServerOptions): Promise<HealthServer> {
  const server = http.createServer((req, res) => {
    const send = (status: number, body: unknown): void => {
      res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/healthz' && path !== '/readyz' && path !== '/metrics') return send(404, { status: 'not_found' });
    if (req.method !== 'GET') return send(405, { status: 'method_not_allowed' });
    if (path === '/healthz') {
      const live = evaluateLiveness(opts.liveness);
      return send(live.status, live.body);
    }
    if (path === '/metrics') {
      void renderMetrics().then(
        ({ contentType, body }) => {
          res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-store' });
          res.end(body);
        },
        (err: unknown) => send(500, { status: 'error', message: err instanceof Error ? err.message : String(err) }),
      );
      return;
    }
    void evaluateReadiness({ ...opts, timeoutMs: opts.checkTimeoutMs }).then((r) => send(r.status, r.body));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
