import { Router, type RequestHandler } from 'express';
import { ARTGEN_BASE_PATH, ARTGEN_PATH_ACTIONS, isArtgenPathAction, type ArtgenNativeTask, type ArtgenPathAction, type TaskView } from '@gmg/contracts';
import type { TaskRecord } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import { artgenStatusOf, toArtgenNativeTask } from '@gmg/tasks';
import { methodNotAllowed } from '../http/error-handler';
import { bodyBytesOf } from '../http/json-body';
import { principalOf } from '../http/principal';
import { underMount } from '../http/request-path';
import { idempotencyOf } from '../middleware/idempotency';
import { callbackUrlOf } from '../webhooks/callback-url';
import type { SubmitTaskDeps } from '../use-cases/submit-task.use-case';
import { waitForTerminalView } from './describe-wait';
import { originOf } from '../observability/submit-metrics';
import { answerNamesTask } from '../middleware/task-answer.shapes';
import { artgenAck, submitArtgen, type ArtgenAccepted } from './submit-artgen.use-case';
import { readOwnTask } from '../use-cases/get-task.use-case';

export interface ArtgenRouterDeps extends SubmitTaskDeps {
  views: { read(id: string): Promise<TaskView | null>; write(t: TaskRecord, opts?: { ifAbsent?: boolean }): Promise<unknown> };
  /** How long `/describe` waits for its text before answering the plain acknowledgement. */
  describeWaitMs: number;
}

const notFound = (id: string) => new DomainError('artgen_not_found', `Task ${id} not found`);

/**
 * The art suite (spec 4.9): `POST /v1/artgen/generations[/<action>]`, `POST …/action {task_id, customId}` and the
 * native task `GET /v1/artgen/<task_id>` (2.3). Errors leave in the art shape `{error:{type,message}}` (the error
 * handler picks the dialect by path). Mounted at /v1/artgen. `guards` run between auth and body parsing: rate limit, idempotency, in-flight.
 */
export function artgenRouter(deps: ArtgenRouterDeps, bodyParsers: RequestHandler[], guards: RequestHandler[]): Router {
  const router = Router();
  const submit =
    (fixed?: ArtgenPathAction): RequestHandler =>
    async (req, res) => {
      const action = fixed ?? (req.params.action as string);
      if (action !== 'action' && !isArtgenPathAction(action)) {
        throw new DomainError('route_not_found', `No art suite action '${action}'; actions: ${ARTGEN_PATH_ACTIONS.join(', ')}, action`);
      }
      const principal = principalOf(res);
      const accepted = await submitArtgen(deps, {
        principal,
        action,
        body: req.body,
        idempotency: idempotencyOf(res),
        origin: originOf(req, res),
        callbackUrl: callbackUrlOf(res),
        bodyBytes: bodyBytesOf(req),
      });
      if (accepted.action === 'describe') {
        // its answer depends on when the task ended: an idempotent replay repeats it whole (task-answer.shapes.ts)
        res.json(await describeAnswer(deps, accepted));
        return;
      }
      answerNamesTask(res, 'G', accepted.task);
      res.json(artgenAck(accepted));
    };

  const base = underMount('/v1/artgen', ARTGEN_BASE_PATH);
  router.post(base, ...guards, ...bodyParsers, submit('imagine'));
  router.all(base, methodNotAllowed(['POST']));
  router.post(`${base}/:action`, ...guards, ...bodyParsers, submit());
  router.all(`${base}/:action`, methodNotAllowed(['POST']));

  router.get('/:id', async (req, res) => {
    const task = await getArtgenTask(deps, principalOf(res).accountId, req.params.id);
    res.setHeader('Cache-Control', 'no-store');
    res.json(task);
  });
  router.all('/:id', methodNotAllowed(['GET']));
  return router;
}

/** The native task of the caller's account (readOwnTask); a task that is not an art task answers like a missing one. */
const getArtgenTask = (deps: ArtgenRouterDeps, accountId: string, id: string): Promise<ArtgenNativeTask> =>
  readOwnTask(deps, accountId, id, { view: (v) => v.artgen, row: (r) => (r.model === 'artgen' ? toArtgenNativeTask(r) : undefined) }, notFound);

/**
 * Describe is synchronous for the client: wait (bounded) for the task to end, then answer with its text in
 * `prompt` and `description`. Past the bound the answer is the plain acknowledgement; the task goes on and is
 * read like any other.
 */
async function describeAnswer(deps: ArtgenRouterDeps, accepted: ArtgenAccepted) {
  const ended = await waitForTerminalView(deps, accepted.taskId, deps.describeWaitMs);
  const row: TaskRecord | null = ended ? await deps.tasks.get(accepted.taskId) : null;
  if (!row) return artgenAck(accepted);
  const view = toArtgenNativeTask(row);
  const status = artgenStatusOf(row);
  if (status === 'FAILURE') return artgenAck(accepted, status, { fail_reason: view.fail_reason });
  const prompts = Array.isArray(row.native?.prompts) ? row.native.prompts : undefined;
  return artgenAck(accepted, status, { prompt: view.prompt, description: view.description ?? view.prompt, ...(prompts ? { prompts } : {}) });
}
