import { Router, type RequestHandler } from 'express';
import { methodNotAllowed } from '../http/error-handler';
import { sendJson } from '../http/send-json';
import { bodyBytesOf } from '../http/json-body';
import { underMount } from '../http/request-path';
import { idempotencyOf } from '../middleware/idempotency';
import { callbackUrlOf } from '../webhooks/callback-url';
import { principalOf } from '../http/principal';
import { originOf } from '../observability/submit-metrics';
import { RESPONSE_VERSION_HEADER } from '../use-cases/response-version';
import { submitTask, type SubmitTaskDeps } from '../use-cases/submit-task.use-case';
import { answerNamesTask } from '../middleware/task-answer.shapes';

export const IMAGE_GENERATIONS_PATH = '/v1/images/generations';
export const VIDEO_GENERATIONS_PATH = '/v1/videos/generations';

/**
 * `POST /v1/images/generations` and `POST /v1/videos/generations` (mounted at /v1, after auth).
 * `guards` run between auth and body parsing: rate limit, idempotency.
 */
export function generationsRouter(deps: SubmitTaskDeps, bodyParsers: RequestHandler[], guards: RequestHandler[]): Router {
  const router = Router();
  for (const endpoint of [IMAGE_GENERATIONS_PATH, VIDEO_GENERATIONS_PATH]) {
    const path = underMount('/v1', endpoint);
    router.post(path, ...guards, ...bodyParsers, async (req, res) => {
      const result = await submitTask(deps, {
        principal: principalOf(res),
        endpoint,
        body: req.body,
        requestId: String(req.id),
        responseVersion: req.get(RESPONSE_VERSION_HEADER),
        idempotency: idempotencyOf(res),
        origin: originOf(req, res),
        callbackUrl: callbackUrlOf(res),
        bodyBytes: bodyBytesOf(req),
      });
      if (result.ack === 'B') {
        res.setHeader(RESPONSE_VERSION_HEADER, result.responseVersion);
        answerNamesTask(res, 'B', result.task, result.responseVersion);
      } else {
        answerNamesTask(res, 'A', result.task);
      }
      sendJson(res, result.httpStatus, result.body);
    });
    router.all(path, methodNotAllowed(['POST']));
  }
  return router;
}
