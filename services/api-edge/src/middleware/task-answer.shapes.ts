import type { Response } from 'express';
import { isArtgenPathAction } from '@gmg/contracts';
import type { TaskRecord } from '@gmg/db';
import { artgenAck } from '../artgen/submit-artgen.use-case';
import { shapeC } from '../avatar/submit-avatar.use-case';
import { answeredWithTask, type Answer, type TaskAnswerShape } from './idempotency-reference';
import { acknowledge } from '../use-cases/submit-task.use-case';

/**
 * A JSON answer as sendJson and res.json send it, with the headers a replay repeats: X-Trace-Id first (the trace
 * middleware sets it before anything else; the task keeps it), then the route's own, then Content-Type.
 */
function json(task: TaskRecord, status: number, value: unknown, headers: Record<string, string> = {}): Answer {
  return {
    status,
    headers: { ...(task.traceId ? { 'x-trace-id': task.traceId } : {}), ...headers, 'content-type': 'application/json; charset=utf-8' },
    body: Buffer.from(JSON.stringify(value)),
  };
}

/**
 * The submission answers that are a pure function of their task (the idempotency middleware stores them as a
 * reference and rebuilds them on replay; docs/idempotency.md). Each name is stored in references kept 24 h: never
 * change what a name builds, add a name. Not here: the art suite's describe (it waits for the task's text, so its
 * answer depends on when the task ended) and every error (kept whole, or not at all).
 */
export const TASK_ANSWER_SHAPES = {
  /** Shape A of POST /v1/images|videos/generations (spec 2.1). */
  A: (task) => json(task, 200, acknowledge('A', task.id, '', undefined).body),
  /** Shape B (HTTP 202): `request_id` is the submission's, kept on the task; `arg` is the X-Service-Response-Version sent. */
  B: (task, version) => json(task, 202, acknowledge('B', task.id, task.requestId ?? '', version).body, { 'x-service-response-version': version }),
  /** Shape C of POST /v1/motion2/private-avatar. */
  C: (task) => json(task, 200, shapeC(task.id)),
  /** The art suite's acknowledgement of a path action or a customId action; the action is the task's own. */
  G: (task) => {
    const action: unknown = task.request.derived?.action;
    if (!isArtgenPathAction(action)) throw new Error(`task ${task.id} has no art suite action`);
    return json(task, 200, artgenAck({ taskId: task.id, action }));
  },
} as const satisfies Record<string, TaskAnswerShape>;

export type TaskAnswerShapeName = keyof typeof TASK_ANSWER_SHAPES;

/** The route's answer is `shape` of `task` (see answeredWithTask); a typo in the name is a compile error. */
export const answerNamesTask = (res: Response, shape: TaskAnswerShapeName, task: TaskRecord, arg?: string): void => answeredWithTask(res, shape, task, arg);
