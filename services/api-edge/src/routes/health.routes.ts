import { Router } from 'express';
import { methodNotAllowed } from '../http/error-handler';

export interface HealthDeps {
  /** Each probe resolves when its dependency answers; rejects or times out otherwise. */
  probes: Record<string, () => Promise<unknown>>;
  isDraining: () => boolean;
  timeoutMs?: number;
  logger?: { warn(obj: object, msg: string): void };
}

const within = <T>(p: Promise<T>, ms: number): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then(
      (v) => { clearTimeout(t); resolve(v); },
      (e: unknown) => { clearTimeout(t); reject(e); },
    );
  });

/** `/healthz`: the process is alive. `/readyz`: Postgres and Redis answer and we are not draining. No auth. */
export function healthRouter(deps: HealthDeps): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const checks: Record<string, string> = {};
    await Promise.all(
      Object.entries(deps.probes).map(async ([name, probe]) => {
        try {
          await within(Promise.resolve().then(probe), deps.timeoutMs ?? 2000);
          checks[name] = 'ok';
        } catch (e) {
          // No auth on this route: the detail (hosts, addresses) goes to the log, not to the caller.
          deps.logger?.warn({ probe: name, err: (e as Error).message }, 'readiness probe failed');
          checks[name] = 'error';
        }
      }),
    );
    if (deps.isDraining()) checks.draining = 'yes';
    const ready = !deps.isDraining() && Object.values(checks).every((v) => v === 'ok');
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', checks });
  });
  router.all(['/healthz', '/readyz'], methodNotAllowed(['GET']));
  return router;
}
