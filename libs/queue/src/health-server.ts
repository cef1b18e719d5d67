import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type HealthCheck = () => Promise<unknown>;

export interface HealthServerOptions {
  port: number;
  host?: string;
  /** Named readiness checks (e.g. pg: SELECT 1, redis: PING); each must settle within `checkTimeoutMs`. */
  checks: Record<string, HealthCheck>;
  checkTimeoutMs?: number;
  /** True once shutdown began: /readyz answers 503 so traffic and scaling stop counting this replica. */
  isDraining?: () => boolean;
}

export interface HealthServer {
  port: number;
  close(): Promise<void>;
}

const withTimeout = <T>(p: Promise<T>, ms: number): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    p.then((v) => { clearTimeout(t); resolve(v); }, (e: unknown) => { clearTimeout(t); reject(e); });
  });

/** GET /healthz: the process is alive. GET /readyz: every dependency answers (200) or not (503, names which). */
export async function startHealthServer(opts: HealthServerOptions): Promise<HealthServer> {
  const timeout = opts.checkTimeoutMs ?? 2000;
  const server = http.createServer((req, res) => {
    const send = (status: number, body: unknown): void => {
      res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET') return send(405, { status: 'method_not_allowed' });
    if (path === '/healthz') return send(200, { status: 'ok' });
    if (path !== '/readyz') return send(404, { status: 'not_found' });
    if (opts.isDraining?.()) return send(503, { status: 'draining' });
    void Promise.all(
      Object.entries(opts.checks).map(async ([name, check]) => {
        try {
          await withTimeout(check(), timeout);
          return [name, 'ok'] as const;
        } catch (e) {
          return [name, `down: ${(e as Error)?.message ?? 'error'}`] as const;
        }
      }),
    ).then((results) => {
      const checks = Object.fromEntries(results);
      const ok = results.every(([, r]) => r === 'ok');
      send(ok ? 200 : 503, { status: ok ? 'ready' : 'not_ready', checks });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
