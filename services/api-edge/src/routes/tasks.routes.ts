import { Router } from 'express';
import { methodNotAllowed } from '../http/error-handler';
import { principalOf } from '../http/principal';
import { sendJson } from '../http/send-json';
import { getTask, type GetTaskDeps } from '../use-cases/get-task.use-case';

const NO_STORE = { 'Cache-Control': 'no-store' } as const;

/** `GET /v1/tasks/:id` → `{code: 200, data: UnifiedTask}`; a failed task is still 200 with `data.error`. Mounted at /v1/tasks. */
export function tasksRouter(deps: GetTaskDeps): Router {
  const router = Router();
  router.get('/:id', async (req, res) => {
    const task = await getTask(deps, principalOf(res).accountId, req.params.id);
    // the busiest route: written directly (~5 % of a poll's CPU, docs/benchmarks.md)
    sendJson(res, 200, { code: 200, data: task }, NO_STORE);
  });
  router.all('/:id', methodNotAllowed(['GET']));
  return router;
}
