import { Router } from 'express';
import { methodNotAllowed } from '../http/error-handler';
import { principalOf } from '../http/principal';
import { getTask, type GetTaskDeps } from '../use-cases/get-task.use-case';

/** `GET /v1/tasks/:id` → `{code: 200, data: UnifiedTask}`; a failed task is still 200 with `data.error`. */
export function tasksRouter(deps: GetTaskDeps): Router {
  const router = Router();
  router.get('/v1/tasks/:id', async (req, res) => {
    const task = await getTask(deps, principalOf(res).accountId, req.params.id);
    // The busiest route: written directly (the same headers res.json sets, without its content-type parsing,
    // freshness check and header lookups — ~5 % of a poll's CPU, docs/benchmarks.md).
    const body = JSON.stringify({ code: 200, data: task });
    res.writeHead(200, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      'Cache-Control': 'no-store',
    });
    res.end(body);
  });
  router.all('/v1/tasks/:id', methodNotAllowed(['GET']));
  return router;
}
