import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { VideoRenderer } from '../../media/video-renderer';
import { stateAt } from '../../sim-scenario';
import { newVendorTask, rateLimitedOnce, type VendorSimContext, type VendorTask } from '../vendor-sim-kit';
import { GEMINI_SIM_MODELS, VeoRefusal, validateVeoBody, type VeoJob } from './gemini-sim.schema';

/**
 * Veo on the Gemini API as Google documents it (docs/upstreams.md, `gemini`), mounted under `/gemini`:
 * - `POST /v1beta/models/{model}:predictLongRunning` with `x-goog-api-key` → an operation `{name}`;
 * - `GET /v1beta/models/{model}/operations/{id}` → `{name}` while running, then `{name, done: true, response}` with
 *   `response.generateVideoResponse.generatedSamples[].video.uri`, or `{name, done: true, error: {code, message}}`;
 * - `GET /v1beta/files/{id}:download?alt=media` with the key → the MP4, gone (404) two days after it was made
 *   (Gemini API video guide: "videos are stored on the server for 2 days").
 * Errors are Google's `{error: {code, message, status, details?}}`. Markers: `[sim:moderation]` → done with
 * `raiMediaFilteredCount`, `[sim:fail]` → done with `error`, `[sim:never]` → never done, `[sim:429once]` →
 * the first submit answers `429 RESOURCE_EXHAUSTED` with a RetryInfo of 1 s.
 */
const FILE_TTL_MS = 2 * 24 * 3600_000;
const ESTIMATED_SECONDS = 90;
const RESPONSE_TYPE = 'type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse';
const DIMS: Record<string, [number, number]> = { '720p': [1280, 720], '1080p': [1920, 1080], '4k': [3840, 2160] };

type VeoTask = VendorTask & { veo?: VeoJob & { model: string } };

const STATUS: Record<number, string> = { 400: 'INVALID_ARGUMENT', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 429: 'RESOURCE_EXHAUSTED', 503: 'UNAVAILABLE' };
const googleError = (res: Response, code: number, message: string, details?: unknown[]) =>
  res.status(code).json({ error: { code, message, status: STATUS[code] ?? 'UNKNOWN', ...(details ? { details } : {}) } });

const operationName = (t: VeoTask) => `models/${t.veo!.model}/operations/${t.id.slice('task_'.length)}`;
const fileId = (t: VeoTask) => t.id.slice('task_'.length);

export function geminiSimRouter(ctx: VendorSimContext): Router {
  const r = express.Router();
  let renderer: VideoRenderer | undefined;
  const find = (id: string): VeoTask | undefined => {
    const t = /^[A-Za-z0-9]{1,64}$/.test(id) ? (ctx.store.get(`task_${id}`) as VeoTask | undefined) : undefined;
    return t?.veo ? t : undefined;
  };

  r.use((req, res, next) => auth(ctx, req, res, next));
  r.post('/v1beta/models/:call', express.json({ limit: '30mb' }), (req, res) => {
    const call = String(req.params.call);
    const at = call.lastIndexOf(':');
    const [model, method] = at > 0 ? [call.slice(0, at), call.slice(at + 1)] : [call, ''];
    if (method !== 'predictLongRunning') return googleError(res, 404, `The requested URL /v1beta/models/${call} was not found on this server.`);
    if (!(GEMINI_SIM_MODELS as readonly string[]).includes(model)) {
      return googleError(res, 404, `models/${model} is not found for API version v1beta, or is not supported for predictLongRunning.`);
    }
    submit(ctx, model, req, res);
  });
  r.get('/v1beta/models/:model/operations/:id', (req, res) => {
    const task = find(String(req.params.id));
    if (!task || task.veo!.model !== req.params.model) return googleError(res, 404, 'Operation not found.');
    res.json(operationView(task, ctx.now(), `${req.protocol}://${req.get('host')}${req.baseUrl}`));
  });
  r.get('/v1beta/files/:call', async (req, res) => {
    const [id, method] = String(req.params.call).split(':');
    const task = method === 'download' ? find(id ?? '') : undefined;
    const s = task ? stateAt(task, ctx.now()) : undefined;
    const gone = s?.endedAt === undefined || ctx.now() >= s.endedAt + (ctx.linkTtlMs ?? FILE_TTL_MS);
    if (!task || s?.status !== 'completed' || gone) return googleError(res, 404, `File ${id ?? ''} not found.`);
    if (req.query.alt !== 'media') return googleError(res, 400, 'Downloading a file needs alt=media.');
    renderer ??= new VideoRenderer();
    if (!renderer.available) return googleError(res, 503, 'video rendering is not available on this platform');
    res.setHeader('Content-Type', 'video/mp4');
    res.send(await renderer.render(task.veo!.seconds));
  });
  r.use((req: Request, res: Response) => googleError(res, 404, `The requested URL ${req.originalUrl} was not found on this server.`));
  r.use((err: { type?: string }, _req: Request, res: Response, next: NextFunction) => {
    if (err.type === 'entity.parse.failed') return googleError(res, 400, 'Invalid JSON payload received.');
    if (err.type === 'entity.too.large') return googleError(res, 400, 'Request payload size exceeds the limit.');
    next(err);
  });
  return r;
}

/**
 * Google's key check: the `x-goog-api-key` header (or `?key=`). None: `403 PERMISSION_DENIED`; an unknown one:
 * `400 INVALID_ARGUMENT` with reason `API_KEY_INVALID` (the answer Google gives a wrong key on googleapis.com).
 */
function auth(ctx: VendorSimContext, req: Request, res: Response, next: NextFunction) {
  const key = req.header('x-goog-api-key') ?? (typeof req.query.key === 'string' ? req.query.key : undefined);
  if (!key) {
    return googleError(
      res,
      403,
      "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
    );
  }
  if (ctx.apiKey !== undefined && key !== ctx.apiKey) {
    return googleError(res, 400, 'API key not valid. Please pass a valid API key.', [
      { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' },
    ]);
  }
  next();
}

function submit(ctx: VendorSimContext, model: string, req: Request, res: Response) {
  let job: VeoJob;
  try {
    job = validateVeoBody(model, req.body as unknown);
  } catch (e) {
    if (e instanceof VeoRefusal) return googleError(res, 400, e.message);
    throw e;
  }
  if (rateLimitedOnce(job.prompt)) {
    return googleError(res, 429, 'Resource has been exhausted (e.g. check quota).', [
      { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' },
    ]);
  }
  const [w, h] = DIMS[job.resolution] ?? [1280, 720];
  const [width, height] = job.aspectRatio === '9:16' ? [h, w] : [w, h];
  const expected = { kind: 'videos' as const, count: 1, width, height, durationSeconds: job.seconds, format: 'mp4' };
  const task: VeoTask = newVendorTask(ctx, model, expected, job.prompt, ESTIMATED_SECONDS);
  task.veo = { ...job, model };
  res.json({ name: operationName(task) });
}

/** The operation at `now`; `base` is the host the caller reached (the file link's, as Google's are on its API host). */
function operationView(task: VeoTask, now: number, base: string): Record<string, unknown> {
  const name = operationName(task);
  const s = stateAt(task, now);
  if (s.status === 'pending' || s.status === 'processing') return { name };
  if (s.status === 'completed') {
    const uri = `${base}/v1beta/files/${fileId(task)}:download?alt=media`;
    return { name, done: true, response: { '@type': RESPONSE_TYPE, generateVideoResponse: { generatedSamples: [{ video: { uri } }] } } };
  }
  if (task.outcome === 'moderation') {
    const reasons = ["Your prompt couldn't be submitted because it might violate our usage guidelines. (simulated)"];
    return { name, done: true, response: { '@type': RESPONSE_TYPE, generateVideoResponse: { raiMediaFilteredCount: 1, raiMediaFilteredReasons: reasons } } };
  }
  return { name, done: true, error: { code: 13, message: 'Video generation failed (simulated)' } };
}
