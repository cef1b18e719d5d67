import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { SIM_FAIL_MESSAGE, stateAt } from '../../sim-scenario';
import { expiringFileUrl, newVendorTask, rateLimitedOnce, scheduleVendorCallback, type VendorSimContext, type VendorTask } from '../vendor-sim-kit';
import { klingAuth, klingError } from './kling-sim.auth';
import { validateOmniBody } from './kling-sim.schema';

/**
 * Kling's official API as it documents itself (docs/upstreams/kling.md), mounted under `/kling`:
 * - `POST /v1/videos/omni-video` (Kling O1) with a Bearer JWT → `{code: 0, message, request_id, data: {task_id, task_status}}`;
 * - `GET /v1/videos/omni-video/{task_id}` → `data.task_status` submitted → processing → succeed | failed on the
 *   simulator's clock; `data.task_result.videos[0].url` lives 30 days (Kling deletes generated files after 30 days).
 * Markers in the prompt: `[sim:moderation]` → the submit answers 400 code 1301, `[sim:fail]` → `failed`,
 * `[sim:never]` → `processing` forever, `[sim:429once]` → the first submit answers 429 code 1302 with Retry-After, `[sim:arrears]` → 429 code 1101.
 */
const FILE_TTL_MS = 30 * 24 * 3600_000;
const ESTIMATED_SECONDS = 150;
/** Output frame per mode and ratio (std 720p, pro 1080p); without a ratio (a frame or a base video sets it) 16:9. */
const SIDES = { std: [1280, 720], pro: [1920, 1080] } as const;

type KlingSimTask = VendorTask & { vendor: 'kling'; createdAt: number };

const ok = (res: Response, data: unknown) => res.json({ code: 0, message: 'SUCCEED', request_id: `sim-${Date.now().toString(36)}`, data });

function dims(mode: unknown, ratio: unknown): { width: number; height: number } {
  const [long, short] = SIDES[mode === 'pro' ? 'pro' : 'std'];
  if (ratio === '9:16') return { width: short, height: long };
  if (ratio === '1:1') return { width: short, height: short };
  return { width: long, height: short };
}

export function klingSimRouter(ctx: VendorSimContext): Router {
  const r = express.Router();
  r.use(klingAuth(ctx));
  r.post('/v1/videos/omni-video', express.json({ limit: '30mb' }), (req, res) => submit(ctx, req, res));
  r.get('/v1/videos/omni-video/:id', (req, res) => {
    const task = ctx.store.get(String(req.params.id)) as KlingSimTask | undefined;
    if (!task || task.vendor !== 'kling') return klingError(res, 404, 1203, 'task not found (guess: Kling documents no code for an unknown task id)');
    ok(res, view(ctx, task));
  });
  r.use((_req: Request, res: Response) => klingError(res, 404, 1202, 'invalid request method or path'));
  r.use((err: { type?: string }, _req: Request, res: Response, next: NextFunction) => {
    if (err.type === 'entity.parse.failed') return klingError(res, 400, 1200, 'request body is not valid JSON');
    if (err.type === 'entity.too.large') return klingError(res, 413, 1200, 'request body too large');
    next(err);
  });
  return r;
}

function submit(ctx: VendorSimContext, req: Request, res: Response) {
  const problem = validateOmniBody(req.body);
  if (problem) return klingError(res, 400, problem.code, problem.message);
  const b = req.body as Record<string, unknown>;
  if (String(b.prompt).includes('[sim:moderation]')) return klingError(res, 400, 1301, 'Content security policy triggered: please modify the input');
  // An account in arrears is HTTP 429 too, with its own code (1101): the adapter must not read it as a rate limit.
  if (String(b.prompt).includes('[sim:arrears]')) return klingError(res, 429, 1101, 'Account balance not enough');
  if (rateLimitedOnce(b.prompt)) {
    res.setHeader('Retry-After', '1');
    return klingError(res, 429, 1302, 'API request rate too high, please slow down');
  }
  const seconds = typeof b.duration === 'string' ? Number(b.duration) : 5;
  const expected = { kind: 'videos' as const, count: 1, format: 'mp4', durationSeconds: seconds, ...dims(b.mode, b.aspect_ratio) };
  const task = Object.assign(newVendorTask(ctx, typeof b.model_name === 'string' ? b.model_name : 'kling-video-o1', expected, b.prompt, ESTIMATED_SECONDS), {
    vendor: 'kling' as const,
    createdAt: ctx.now(),
  });
  // Kling's callback protocol: the task as the query's `data` carries it, posted when it ends
  if (typeof b.callback_url === 'string') scheduleVendorCallback(ctx, task, b.callback_url, () => view(ctx, task));
  ok(res, { task_id: task.id, task_status: 'submitted', task_info: {}, created_at: task.createdAt, updated_at: task.createdAt });
}

/** `data` of the query answer at the simulator's clock: a pure function of the task and the clock. */
function view(ctx: VendorSimContext, task: KlingSimTask): Record<string, unknown> {
  const s = stateAt(task, ctx.now());
  const base = { task_id: task.id, task_info: {}, created_at: task.createdAt, updated_at: s.endedAt ?? ctx.now() };
  switch (s.status) {
    case 'pending':
      return { ...base, task_status: 'submitted', task_status_msg: '' };
    case 'processing':
      return { ...base, task_status: 'processing', task_status_msg: '' };
    case 'completed': {
      const url = expiringFileUrl(ctx, task, 0, (s.endedAt ?? ctx.now()) + FILE_TTL_MS);
      const videos = [{ id: `${task.id}-0`, url, duration: String(task.expected.durationSeconds ?? 5) }];
      return { ...base, task_status: 'succeed', task_status_msg: '', final_unit_deduction: '1', task_result: { videos } };
    }
    default:
      return { ...base, task_status: 'failed', task_status_msg: SIM_FAIL_MESSAGE };
  }
}
