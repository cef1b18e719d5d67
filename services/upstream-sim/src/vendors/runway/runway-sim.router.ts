import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { stateAt } from '../../sim-scenario';
import { expiringFileUrl, newVendorTask, rateLimitedOnce, vendorAuth, type VendorSimContext, type VendorTask } from '../vendor-sim-kit';
import { sizeOf, validateRunwayBody, type RunwayEndpoint } from './runway-sim.schema';

/**
 * Runway's API as it documents itself (docs/upstreams/runway.md), mounted under `/runway`:
 * - every call needs `Authorization: Bearer <key>` (401) and `X-Runway-Version: 2024-11-06` (400 without it);
 * - `POST /v1/text_to_video`, `/v1/image_to_video` → `{id}`; a body Runway's schema refuses → 400 `{error, issues}`;
 * - `GET /v1/tasks/{id}` → `{id, createdAt, status, progress?, output?, failure?, failureCode?}` on the simulator's
 *   clock; `output[]` links die 24 h after the task ended (Runway: "expire within 24-48 hours");
 * - `DELETE /v1/tasks/{id}` → 204: a running task becomes CANCELLED, an ended one is deleted (then 404).
 * Markers in the prompt: `[sim:fail]` → FAILED `INTERNAL.BAD_OUTPUT.CODE01`, `[sim:moderation]` → FAILED
 * `SAFETY.INPUT.TEXT`, `[sim:never]` → RUNNING forever, `[sim:429once]` → the first submit answers 429.
 */
const OUTPUT_TTL_MS = 24 * 3600_000;
const VERSION = '2024-11-06';
const ESTIMATED_SECONDS: Record<string, number> = { seedance2: 150, seedance2_fast: 60, 'veo3.1_fast': 90 };

type RunwaySimTask = VendorTask & { vendor: 'runway'; cancelledAt?: number; deleted?: boolean };

const error = (res: Response, status: number, message: string, extra: Record<string, unknown> = {}) => res.status(status).json({ error: message, ...extra });

export function runwaySimRouter(ctx: VendorSimContext): Router {
  const r = express.Router();
  // The 401 body is a guess: Runway documents the status ("The provided API key is not valid"), not the body.
  const auth = vendorAuth(
    ctx,
    (req) => /^Bearer (.+)$/.exec(req.header('authorization') ?? '')?.[1],
    (res) => error(res, 401, 'Invalid API key'),
  );
  const version = (req: Request, res: Response, next: NextFunction) =>
    req.header('x-runway-version') === VERSION ? next() : error(res, 400, `The X-Runway-Version header is required and must be ${VERSION}`);
  const submitAt = (endpoint: RunwayEndpoint) => (req: Request, res: Response) => submit(ctx, endpoint, req, res);

  r.use(auth, version);
  r.post('/v1/text_to_video', express.json({ limit: '20mb' }), submitAt('text_to_video'));
  r.post('/v1/image_to_video', express.json({ limit: '20mb' }), submitAt('image_to_video'));
  r.get('/v1/tasks/:id', (req, res) => {
    const task = live(ctx, String(req.params.id));
    if (!task) return error(res, 404, 'Task not found');
    res.json(taskView(ctx, task, ctx.now()));
  });
  r.delete('/v1/tasks/:id', (req, res) => {
    const task = live(ctx, String(req.params.id));
    if (!task) return error(res, 404, 'Task not found');
    // Runway: running, pending or throttled tasks are cancelled; any other task is deleted.
    const s = stateAt(task, ctx.now());
    if (task.cancelledAt === undefined && (s.status === 'pending' || s.status === 'processing')) task.cancelledAt = ctx.now();
    else task.deleted = true;
    res.status(204).end();
  });
  r.use((_req: Request, res: Response) => error(res, 404, 'Not found'));
  r.use((err: { type?: string }, _req: Request, res: Response, next: NextFunction) => {
    if (err.type === 'entity.parse.failed') return error(res, 400, 'Invalid JSON body');
    if (err.type === 'entity.too.large') return error(res, 413, 'Request body too large');
    next(err);
  });
  return r;
}

function live(ctx: VendorSimContext, id: string): RunwaySimTask | undefined {
  const task = ctx.store.get(id) as RunwaySimTask | undefined;
  return task?.vendor === 'runway' && !task.deleted ? task : undefined;
}

function submit(ctx: VendorSimContext, endpoint: RunwayEndpoint, req: Request, res: Response) {
  const body: unknown = req.body;
  const issues = validateRunwayBody(endpoint, body);
  if (issues.length) return error(res, 400, 'Validation of body failed', { issues });
  const b = body as Record<string, unknown>;
  if (rateLimitedOnce(b.promptText)) {
    // Runway documents 429 as retryable; the Retry-After header is a guess (the SDK honours one when sent).
    res.setHeader('Retry-After', '1');
    return error(res, 429, 'You have exceeded the rate limit');
  }
  const model = String(b.model);
  const seconds = typeof b.duration === 'number' ? b.duration : model === 'veo3.1_fast' ? 8 : 5;
  const expected = { kind: 'videos' as const, count: 1, ...sizeOf(b), durationSeconds: seconds, format: 'mp4' };
  const task: RunwaySimTask = Object.assign(newVendorTask(ctx, model, expected, b.promptText, ESTIMATED_SECONDS[model]), { vendor: 'runway' as const });
  res.json({ id: task.id });
}

/** The answer of `GET /v1/tasks/{id}` at `now`: a pure function of the task and the clock. */
function taskView(ctx: VendorSimContext, task: RunwaySimTask, now: number): Record<string, unknown> {
  const head = { id: task.id, createdAt: new Date(task.startedAt).toISOString() };
  const s = stateAt(task, task.cancelledAt ?? now);
  if (task.cancelledAt !== undefined) return { ...head, status: 'CANCELLED' };
  switch (s.status) {
    case 'pending':
      return { ...head, status: 'PENDING' };
    case 'processing':
      return { ...head, status: 'RUNNING', progress: s.progress / 100 };
    case 'completed':
      return { ...head, status: 'SUCCEEDED', output: [expiringFileUrl(ctx, task, 0, (s.endedAt ?? now) + OUTPUT_TTL_MS)] };
    default:
      return task.outcome === 'moderation'
        ? { ...head, status: 'FAILED', failure: 'The prompt was flagged by content moderation.', failureCode: 'SAFETY.INPUT.TEXT' }
        : { ...head, status: 'FAILED', failure: 'An unexpected error occurred.', failureCode: 'INTERNAL.BAD_OUTPUT.CODE01' };
  }
}
