import type { Request, RequestHandler, Response } from 'express';
import { httpDuration, httpRequests, registry } from './metrics';

/**
 * The route label: the Express route pattern that answered (`/v1/tasks/:id`), never the raw path, so task ids and
 * probes of random paths cannot grow the label set. A request no route answered (404, or refused by a middleware
 * such as auth before routing) is `unmatched`.
 */
export function routeOf(req: Pick<Request, 'baseUrl' | 'route'>): string {
  const pattern: unknown = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof pattern !== 'string') return 'unmatched';
  return `${req.baseUrl ?? ''}${pattern}` || '/';
}

/** Counts and times every request by method, route pattern and status; mount first. */
export function httpMetricsMiddleware(opts: { ignore?: (path: string) => boolean } = {}): RequestHandler {
  return (req, res, next) => {
    if (opts.ignore?.(req.path)) return next();
    const start = process.hrtime.bigint();
    res.once('finish', () => {
      const route = routeOf(req);
      httpRequests.inc({ method: req.method, route, status: String(res.statusCode) });
      httpDuration.observe({ method: req.method, route }, Number(process.hrtime.bigint() - start) / 1e9);
    });
    next();
  };
}

/** The Prometheus text exposition of this process's registry. */
export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}

/** Express handler for GET /metrics (the edge mounts it behind its admin token). */
export const metricsHandler = async (_req: Request, res: Response): Promise<void> => {
  const { contentType, body } = await renderMetrics();
  res.setHeader('Content-Type', contentType);
  res.setHeader('Cache-Control', 'no-store');
  res.send(body);
};
