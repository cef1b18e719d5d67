import { Router } from 'express';
import { methodNotAllowed } from '../http/error-handler';
import { principalOf } from '../http/principal';
import { getTask, type GetTaskDeps } from '../use-cases/get-task.use-case';

/** `GET /v1/tasks/:id` → `{code: 200, data: UnifiedTask}`; a failed task is still 200 with `data.error`. */
export function tasksRouter(deps: GetTaskDeps): Router {
  const router = Router();
  router.get('/v1/tasks/:id', async (req, res) => {
    const task = await getTask(deps, principalOf(res).accountId, req.params.id);
    res.setHeader('Cache-Control', 'no-store');
    res.json({ code: 200, data: task });
  });
  router.all('/v1/tasks/:id', methodNotAllowed(['GET']));
  return router;
}
