import { Router } from 'express';
import { evaluateReadiness, type HealthCheck } from '@gmg/queue';
import { methodNotAllowed } from '../http/error-handler';

export interface HealthDeps {
  /** Each probe resolves when its dependency answers; rejects or times out otherwise. */
  probes: Record<string, HealthCheck>;
  isDraining: () => boolean;
  timeoutMs?: number;
  logger?: { warn(obj: object, msg: string): void };
}

/** `/healthz`: the process is alive. `/readyz`: the shared readiness rule of every service. No auth. */
export function healthRouter(deps: HealthDeps): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const r = await evaluateReadiness({
      checks: deps.probes,
      timeoutMs: deps.timeoutMs,
      isDraining: deps.isDraining,
      onCheckFailed: (probe, err) => deps.logger?.warn({ probe, err: err.message }, 'readiness probe failed'),
    });
    res.status(r.status).json(r.body);
  });
  router.all(['/healthz', '/readyz'], methodNotAllowed(['GET']));
  return router;
}
