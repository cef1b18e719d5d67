import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { SIM_FAIL_MESSAGE } from '../../sim-scenario';
import { simStateAt } from '../../task-view';
import {
  expiringFileUrl,
  newVendorTask,
  rateLimitedOnce,
  renderImageBytes,
  scheduleVendorCallback,
  vendorAuth,
  type VendorSimContext,
  type VendorTask,
} from '../vendor-sim-kit';
import { ArkRefusal, validateSeedance, validateSeedream } from './ark-sim.validate';

/**
 * ByteDance ModelArk under `/ark` (docs/upstreams.md, `ark`), `Authorization: Bearer <key>` on every call (401
 * `AuthenticationError` otherwise):
 * - `POST /api/v3/contents/generations/tasks` (Seedance) → `{id}`; `GET …/tasks/{id}` → the task, statuses queued /
 *   running / succeeded / failed / cancelled on the simulator's clock, `content.video_url` alive 24 hours;
 *   `DELETE …/tasks/{id}` cancels a queued task (and deletes an ended one).
 * - `POST /api/v3/images/generations` (Seedream): synchronous, `data[]` of `{url, size}` (24-hour links) or `{b64_json, size}`.
 * Markers: `[sim:moderation]` (video: the task fails with `OutputVideoSensitiveContentDetected`; images: 400
 * `OutputImageSensitiveContentDetected`), `[sim:input-moderation]` (400 `InputTextSensitiveContentDetected` at
 * submit), `[sim:fail]`, `[sim:never]` (stays running), `[sim:429once]`.
 */
const LINK_TTL_MS = 24 * 60 * 60_000;

type ArkTask = VendorTask & { ark: { ratio: string; resolution: string; duration: number; deleted?: boolean } };

const sendArkError = (res: Response, status: number, code: string, message: string, type: string, param?: string) =>
  res.status(status).json({ error: { code, message, ...(param ? { param } : {}), type } });
const TYPE: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  404: 'NotFound',
  409: 'Conflict',
  429: 'TooManyRequests',
  500: 'InternalServiceError',
};
const refuse = (res: Response, e: ArkRefusal) => sendArkError(res, e.status, e.code, e.message, TYPE[e.status] ?? 'BadRequest', e.param);

const answer =
  (h: (req: Request, res: Response) => unknown) =>
  async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      await h(req, res);
    } catch (e) {
      if (e instanceof ArkRefusal) return void refuse(res, e);
      next(e);
    }
  };

/** The refusals every submit shares: the input check, then the rate limit. Answers true when it answered. */
function refusedAtSubmit(res: Response, prompt: string): boolean {
  if (prompt.includes('[sim:input-moderation]')) {
    sendArkError(res, 400, 'InputTextSensitiveContentDetected', 'The request failed because the input text may contain sensitive information.', 'BadRequest');
    return true;
  }
  if (rateLimitedOnce(prompt)) {
    // Retry-After: the simulator's (Ark's 429 answers are not documented to carry one; guess)
    res.setHeader('Retry-After', '1');
    sendArkError(
      res,
      429,
      'RateLimitExceeded.EndpointRPMExceeded',
      'Your request has exceeded the RPM limit of the model. Please retry later.',
      'TooManyRequests',
    );
    return true;
  }
  return false;
}

export function arkSimRouter(ctx: VendorSimContext): Router {
  const r = express.Router();
  const bearer = (req: Request) => /^Bearer (\S+)$/.exec(req.header('authorization') ?? '')?.[1];
  r.use(
    vendorAuth(ctx, bearer, (res) =>
      sendArkError(res, 401, 'AuthenticationError', 'The API key or AK/SK in the request is missing or invalid.', 'Unauthorized'),
    ),
  );
  r.use(express.json({ limit: '30mb' }));
  r.post(
    '/api/v3/contents/generations/tasks',
    answer((req, res) => createTask(ctx, req, res)),
  );
  r.get(
    '/api/v3/contents/generations/tasks/:id',
    answer((req, res) => res.json(taskView(ctx, found(ctx, String(req.params.id)), ctx.now()))),
  );
  r.delete(
    '/api/v3/contents/generations/tasks/:id',
    answer((req, res) => deleteTask(ctx, String(req.params.id), res)),
  );
  r.post(
    '/api/v3/images/generations',
    answer((req, res) => images(ctx, req, res)),
  );
  r.use((req: Request, res: Response) => sendArkError(res, 404, 'NotFound', `The requested path ${req.method} ${req.path} does not exist.`, 'NotFound'));
  r.use((err: { type?: string }, _req: Request, res: Response, next: NextFunction) => {
    if (err.type === 'entity.parse.failed') return void sendArkError(res, 400, 'InvalidParameter', 'The request body is not valid JSON.', 'BadRequest');
    if (err.type === 'entity.too.large') return void sendArkError(res, 413, 'RequestEntityTooLarge', 'The request body is too large.', 'BadRequest');
    next(err);
  });
  return r;
}

function createTask(ctx: VendorSimContext, req: Request, res: Response) {
  const call = validateSeedance(req.body);
  if (refusedAtSubmit(res, call.prompt)) return;
  const expected = { kind: 'videos' as const, count: 1, durationSeconds: call.duration };
  const task = Object.assign(newVendorTask(ctx, call.model, expected, call.prompt, call.model.includes('fast') ? 60 : 180), {
    ark: { ratio: call.ratio, resolution: call.resolution, duration: call.duration },
  });
  // (guess) Ark's callback body is the task object as the query answers it, posted when the task ends
  if (call.callbackUrl) scheduleVendorCallback(ctx, task, call.callbackUrl, () => taskView(ctx, task, ctx.now()));
  res.json({ id: `cgt-${task.id.slice('task_'.length)}` });
}

/** The task of `cgt-…` id; unknown (or deleted) → 404 (guess: the reference documents no not-found body). */
function found(ctx: VendorSimContext, id: string): ArkTask {
  const task = id.startsWith('cgt-') ? (ctx.store.get(`task_${id.slice(4)}`) as ArkTask | undefined) : undefined;
  if (!task?.ark || task.ark.deleted) throw new ArkRefusal(404, 'ResourceNotFound', `The specified task ${id.slice(0, 80)} is not found.`);
  return task;
}

/** The task object of `GET …/tasks/{id}` at `now`: a pure function of the task and the clock. */
function taskView(ctx: VendorSimContext, task: ArkTask, now: number): Record<string, unknown> {
  const s = simStateAt(task, now);
  const status = s.cancelled ? 'cancelled' : ({ pending: 'queued', processing: 'running', completed: 'succeeded' }[s.status as string] ?? 'failed');
  const error =
    status !== 'failed'
      ? null
      : task.outcome === 'moderation'
        ? { code: 'OutputVideoSensitiveContentDetected', message: 'The request failed because the output video may contain sensitive information.' }
        : { code: 'InternalServiceError', message: SIM_FAIL_MESSAGE };
  const done = status === 'succeeded' && s.endedAt !== undefined;
  return {
    id: `cgt-${task.id.slice('task_'.length)}`,
    model: task.model,
    status,
    error,
    ...(done
      ? { content: { video_url: expiringFileUrl(ctx, task, 0, s.endedAt! + LINK_TTL_MS) }, usage: { completion_tokens: 246840, total_tokens: 246840 } }
      : {}),
    created_at: Math.floor(task.startedAt / 1000),
    updated_at: Math.floor((s.endedAt ?? now) / 1000),
    seed: 58944,
    resolution: task.ark.resolution,
    ratio: task.ark.ratio,
    duration: task.ark.duration,
    framespersecond: 24,
  };
}

/** Queued: cancelled; ended: the record deleted; running: refused (Ark cancels only queued tasks; the 409 is a guess). */
function deleteTask(ctx: VendorSimContext, id: string, res: Response) {
  const task = found(ctx, id);
  const s = simStateAt(task, ctx.now());
  if (s.status === 'processing') throw new ArkRefusal(409, 'InvalidAction.TaskRunning', 'A running task cannot be cancelled.');
  if (s.status === 'pending') task.cancelledAt ??= ctx.now();
  else task.ark.deleted = true;
  res.json({});
}

async function images(ctx: VendorSimContext, req: Request, res: Response) {
  const call = validateSeedream(req.body);
  if (refusedAtSubmit(res, call.prompt)) return;
  const task = newVendorTask(ctx, call.model, { kind: 'images', count: 1, width: call.width, height: call.height, format: 'jpeg' }, call.prompt);
  if (task.markers.outcome === 'moderation') {
    // guess: a single image whose output check failed; Ark's stream names this code per image
    return sendArkError(
      res,
      400,
      'OutputImageSensitiveContentDetected',
      'The request failed because the output image may contain sensitive information.',
      'BadRequest',
    );
  }
  if (task.markers.outcome === 'fail') return sendArkError(res, 500, 'InternalServiceError', SIM_FAIL_MESSAGE, 'InternalServiceError');
  // the call lasts as long as the generation (on the simulator's time scale)
  await new Promise((r) => setTimeout(r, Math.min(task.durationMs, 600_000)));
  const size = `${call.width}x${call.height}`;
  const item = call.asUrl
    ? { url: expiringFileUrl(ctx, task, 0, ctx.now() + LINK_TTL_MS), size }
    : { b64_json: (await renderImageBytes(ctx, task, 0)).toString('base64'), size };
  res.json({
    model: call.model,
    created: Math.floor(ctx.now() / 1000),
    data: [item],
    usage: { generated_images: 1, output_tokens: 16384, total_tokens: 16384 },
  });
}
