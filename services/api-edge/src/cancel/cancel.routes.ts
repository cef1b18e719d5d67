import { Router } from 'express';
import { DomainError } from '@gmg/errors';
import { toUnifiedTask } from '@gmg/db';
import { toArtgenNativeTask } from '@gmg/tasks';
import { methodNotAllowed } from '../http/error-handler';
import { principalOf } from '../http/principal';
import { cancelTask, type CancelTaskDeps } from './cancel-task.use-case';

const taskNotFound = (id: string) => new DomainError('task_not_found', `Task ${id} not found`);
const artgenNotFound = (id: string) => new DomainError('artgen_not_found', `Task ${id} not found`);

/**
 * `POST /v1/tasks/<id>/cancel` → `{code: 200, data: UnifiedTask}` (failed, error.type `cancelled`), and the art
 * suite's `POST /v1/artgen/<id>/cancel` → the native task (FAILURE), errors in the art shape (by path). docs/cancel
 * section of docs/webhooks.md and docs/artgen.md. Mounted at /v1.
 */
export function cancelRouter(deps: CancelTaskDeps): Router {
  const router = Router();
  router.post('/tasks/:id/cancel', async (req, res) => {
    const task = await cancelTask(deps, principalOf(res).accountId, req.params.id, taskNotFound);
    res.setHeader('Cache-Control', 'no-store');
    res.json({ code: 200, data: toUnifiedTask(task) });
  });
  router.all('/tasks/:id/cancel', methodNotAllowed(['POST']));
  router.post('/artgen/:id/cancel', async (req, res) => {
    const task = await cancelTask(deps, principalOf(res).accountId, req.params.id, artgenNotFound, 'artgen');
    res.setHeader('Cache-Control', 'no-store');
    res.json(toArtgenNativeTask(task));
  });
  router.all('/artgen/:id/cancel', methodNotAllowed(['POST']));
  return router;
}
