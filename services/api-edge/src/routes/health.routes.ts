import { Router } from 'express';
import { evaluateLiveness, evaluateReadiness, type HealthCheck } from '@gmg/queue';
import { methodNotAllowed } from '../http/error-handler';

export interface HealthDeps {
  /** Each probe resolves when its dependency answers; rejects or times out otherwise. */
  probes: Record<string, HealthCheck>;
  /** Reported, never a reason to be unready (evaluateReadiness: Postgres). */
  degradable?: Record<string, HealthCheck>;
  /** /healthz: can this process do its job (evaluateLiveness). */
  liveness?: Record<string, () => boolean>;
  isDraining: () => boolean;
  timeoutMs?: number;
  logger?: { warn(obj: object, msg: string): void };
}

/** `/healthz`: the process can do its job. `/readyz`: the shared readiness rule of every service. No auth. */
export function healthRouter(deps: HealthDeps): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    const live = evaluateLiveness(deps.liveness);
    res.status(live.status).json(live.body);
  });
  router.get('/readyz', async (_req, res) => {
    const r = await evaluateReadiness({
      checks: deps.probes,
      degradable: deps.degradable,
      timeoutMs: deps.timeoutMs,
      isDraining: deps.isDraining,
      onCheckFailed: (probe, err) => deps.logger?.warn({ probe, err: err.message }, 'readiness probe failed'),
    });
    res.status(r.status).json(r.body);
  });
  router.all(['/healthz', '/readyz'], methodNotAllowed(['GET']));
  return router;
}
