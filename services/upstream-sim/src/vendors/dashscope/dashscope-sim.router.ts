import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { stateAt } from '../../sim-scenario';
import { expiringFileUrl, newVendorTask, rateLimitedOnce, vendorAuth, type VendorSimContext, type VendorTask } from '../vendor-sim-kit';
import { validateDashBody, type DashModel } from './dashscope-sim.schema';

/**
 * Alibaba Cloud Model Studio (DashScope), the Wan video models as Model Studio documents them (docs/upstreams.md,
 * `dashscope`), mounted under `/dashscope`:
 * - `POST /api/v1/services/aigc/video-generation/video-synthesis` with `Authorization: Bearer` and
 *   `X-DashScope-Async: enable` → `{request_id, output: {task_id, task_status: "PENDING"}}`;
 * - `GET /api/v1/tasks/{task_id}` → `output.task_status` on the simulator's clock; `output.video_url` lives 24 hours;
 *   an id it does not know answers `UNKNOWN` (Model Studio: the task does not exist or has expired);
 * - `POST /api/v1/tasks/{task_id}/cancel` stops a PENDING task (CANCELED); any other answers 400 UnsupportedOperation.
 * Markers: `[sim:fail]` → FAILED, `[sim:moderation]` → FAILED DataInspectionFailed (output inspection),
 * `[sim:input-moderated]` → the submit answers 400 DataInspectionFailed, `[sim:never]` → RUNNING forever,
 * `[sim:429once]` → the first submit answers 429 Throttling.RateQuota.
 */
const VIDEO_URL_TTL_MS = 24 * 3600_000;
const ESTIMATED_SECONDS: Record<DashModel, number> = { 'wan2.6-i2v-flash': 60, 'wan2.7-videoedit': 120, 'wan2.7-r2v': 120 };
const SIDES: Record<string, [number, number]> = { '720P': [1280, 720], '1080P': [1920, 1080] };

type DashTask = VendorTask & { vendor: 'dashscope'; canceledAt?: number; seconds: number };
type Json = Record<string, unknown>;

/** Model Studio's error body. */
const fail = (res: Response, status: number, code: string, message: string) => res.status(status).json({ request_id: randomUUID(), code, message });

export function dashScopeSimRouter(ctx: VendorSimContext): Router {
  const r = express.Router();
  // A missing or wrong key: 401 InvalidApiKey (Model Studio error-code page).
  const auth = vendorAuth(
    ctx,
    (req) => /^Bearer (.+)$/.exec(req.header('authorization') ?? '')?.[1],
    (res) => fail(res, 401, 'InvalidApiKey', 'Invalid API-key provided.'),
  );
  // Video synthesis is asynchronous only: without the header Model Studio answers 403 AccessDenied.
  const asyncOnly = (req: Request, res: Response, next: NextFunction) =>
    req.header('x-dashscope-async') === 'enable' ? next() : fail(res, 403, 'AccessDenied', 'current user api does not support synchronous calls');

  r.post('/api/v1/services/aigc/video-generation/video-synthesis', auth, asyncOnly, express.json({ limit: '30mb' }), (req, res) => submit(ctx, req, res));
  r.get('/api/v1/tasks/:id', auth, (req, res) => res.json(taskView(ctx, String(req.params.id))));
  r.post('/api/v1/tasks/:id/cancel', auth, (req, res) => cancel(ctx, String(req.params.id), res));
  r.use((_req: Request, res: Response) => fail(res, 404, 'NotFound', 'Not Found'));
  r.use((err: { type?: string }, _req: Request, res: Response, next: NextFunction) => {
    if (err.type === 'entity.parse.failed') return fail(res, 400, 'InvalidParameter', 'The request body is not valid JSON');
    if (err.type === 'entity.too.large') return fail(res, 413, 'RequestTooLarge', 'Request Entity Too Large');
    next(err);
  });
  return r;
}

function submit(ctx: VendorSimContext, req: Request, res: Response) {
  const { model, problem } = validateDashBody(req.body);
  if (problem || !model) return fail(res, 400, 'InvalidParameter', problem ?? 'Model not exist.');
  const b = req.body as { input: Json; parameters?: Json };
  const prompt = typeof b.input.prompt === 'string' ? b.input.prompt : '';
  if (prompt.includes('[sim:input-moderated]')) return fail(res, 400, 'DataInspectionFailed', 'Input data may contain inappropriate content.');
  if (rateLimitedOnce(prompt)) {
    res.setHeader('Retry-After', '1');
    return fail(res, 429, 'Throttling.RateQuota', 'Requests rate limit exceeded, please try again later.');
  }
  const p = b.parameters ?? {};
  const [width, height] = SIDES[typeof p.resolution === 'string' ? p.resolution : '1080P'] ?? SIDES['1080P'];
  const seconds = typeof p.duration === 'number' && p.duration > 0 ? p.duration : 5;
  const expected = { kind: 'videos' as const, count: 1, width, height, durationSeconds: seconds, format: 'mp4' };
  const task = Object.assign(newVendorTask(ctx, model, expected, prompt, ESTIMATED_SECONDS[model]), { vendor: 'dashscope' as const, seconds });
  res.json({ request_id: randomUUID(), output: { task_id: task.id, task_status: 'PENDING' } });
}

const find = (ctx: VendorSimContext, id: string): DashTask | undefined => {
  const t = ctx.store.get(id) as DashTask | undefined;
  return t?.vendor === 'dashscope' ? t : undefined;
};

function cancel(ctx: VendorSimContext, id: string, res: Response) {
  const task = find(ctx, id);
  if (!task || task.canceledAt !== undefined || stateAt(task, ctx.now()).status !== 'pending') {
    return fail(res, 400, 'UnsupportedOperation', 'Failed to cancel the task, please confirm if the task is in PENDING status.');
  }
  task.canceledAt = ctx.now();
  res.json({ request_id: randomUUID() });
}

/** The answer of `GET /api/v1/tasks/{id}` now: a pure function of the task and the clock. */
function taskView(ctx: VendorSimContext, id: string): Json {
  const task = find(ctx, id);
  const view = (output: Json, usage?: Json) => ({ request_id: randomUUID(), output: { task_id: id, ...output }, ...(usage ? { usage } : {}) });
  if (!task) return view({ task_status: 'UNKNOWN' });
  const iso = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
  const times = { submit_time: iso(task.startedAt) };
  if (task.canceledAt !== undefined) return view({ task_status: 'CANCELED', ...times, end_time: iso(task.canceledAt) });
  const s = stateAt(task, ctx.now());
  switch (s.status) {
    case 'pending':
      return view({ task_status: 'PENDING', ...times });
    case 'processing':
      return view({ task_status: 'RUNNING', ...times, scheduled_time: iso(task.startedAt) });
    case 'completed': {
      const end = s.endedAt ?? ctx.now();
      const video_url = expiringFileUrl(ctx, task, 0, end + VIDEO_URL_TTL_MS);
      return view({ task_status: 'SUCCEEDED', ...times, end_time: iso(end), video_url }, { duration: task.seconds, video_count: 1 });
    }
    default: {
      const moderated = task.outcome === 'moderation';
      const code = moderated ? 'DataInspectionFailed' : 'InternalError';
      const message = moderated ? 'Output data may contain inappropriate content.' : 'Generation failed (simulated)';
      return view({ task_status: 'FAILED', ...times, end_time: iso(s.endedAt ?? ctx.now()), code, message });
    }
  }
}
