import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { stateAt } from '../../sim-scenario';
import { expiringFileUrl, newVendorTask, rateLimitedOnce, vendorAuth, type VendorSimContext, type VendorTask } from '../vendor-sim-kit';
import { BFL_SIM_MODELS, validateBflBody, type BflModel } from './bfl-sim.schema';

/**
 * The FLUX API of Black Forest Labs as it documents itself (docs/upstreams.md, `bfl`), mounted under `/bfl`:
 * - `POST /v1/<model>` (flux-2-pro, flux-2-max, flux-2-flex) with `x-key` → `{id, polling_url, cost, input_mp, output_mp}`;
 * - `GET /v1/get_result?id=` with `x-key` → `{id, status, result, progress}`, the status on the simulator's clock;
 *   `result.sample` is a link that dies 10 minutes after the task ended (BFL: "URLs expire in 10 minutes").
 * Markers in the prompt: `[sim:moderation]` → `Content Moderated`, `[sim:request-moderated]` → `Request Moderated`,
 * `[sim:fail]` → `Error`, `[sim:never]` → `Pending` forever, `[sim:429once]` → the first submit answers 429.
 */
const SAMPLE_TTL_MS = 10 * 60_000;
const ESTIMATED_SECONDS: Record<BflModel, number> = { 'flux-2-pro': 25, 'flux-2-max': 40, 'flux-2-flex': 20 };
/** Credits (1 credit = US$0.01) for the first output megapixel and each further one (BFL's bfl-api skill pricing table; simulated). */
const PRICE: Record<BflModel, [number, number]> = { 'flux-2-pro': [3, 1.5], 'flux-2-max': [7, 3], 'flux-2-flex': [5, 5] };

type BflSimTask = VendorTask & { vendor: 'bfl'; requestModerated: boolean; seed: number };

const detail = (res: Response, status: number, d: unknown) => res.status(status).json({ detail: d });

export function bflSimRouter(ctx: VendorSimContext): Router {
  const r = express.Router();
  // BFL's key header; a missing or wrong one is 403 (help.bfl.ai "Why did my request fail?": 403 Forbidden).
  const auth = vendorAuth(
    ctx,
    (req) => req.header('x-key'),
    (res) => detail(res, 403, 'Not authenticated'),
  );
  const knownModel = (req: Request, res: Response, next: NextFunction) =>
    (BFL_SIM_MODELS as readonly string[]).includes(String(req.params.model)) ? next() : detail(res, 404, 'Not Found');

  r.post('/v1/:model', knownModel, auth, express.json({ limit: '30mb' }), (req, res) => submit(ctx, req, res));
  r.get('/v1/get_result', auth, (req, res) => {
    const id = typeof req.query.id === 'string' ? req.query.id : undefined;
    if (!id) return detail(res, 422, [{ type: 'missing', loc: ['query', 'id'], msg: 'Field required' }]);
    res.json(resultView(ctx, id, ctx.now()));
  });
  r.use((_req: Request, res: Response) => detail(res, 404, 'Not Found'));
  // FastAPI answers a body that is not JSON with 422 json_invalid.
  r.use((err: { type?: string }, _req: Request, res: Response, next: NextFunction) => {
    if (err.type === 'entity.parse.failed') return detail(res, 422, [{ type: 'json_invalid', loc: ['body'], msg: 'JSON decode error' }]);
    if (err.type === 'entity.too.large') return detail(res, 413, 'Request Entity Too Large');
    next(err);
  });
  return r;
}

function submit(ctx: VendorSimContext, req: Request, res: Response) {
  const model = String(req.params.model) as BflModel;
  const body: unknown = req.body;
  const errors = validateBflBody(model, body);
  if (errors.length) return detail(res, 422, errors);
  const b = body as Record<string, unknown>;
  if (rateLimitedOnce(b.prompt)) {
    // BFL limits active tasks per key (24); over it, 429 with this body (black-forest-labs/skills, bfl-api rate-limiting.md)
    res.setHeader('Retry-After', '1');
    return res.status(429).json({ error: 'rate_limit_exceeded', message: 'Too many concurrent requests', retry_after: 1 });
  }
  const width = typeof b.width === 'number' ? b.width : 1024;
  const height = typeof b.height === 'number' ? b.height : 1024;
  const format = typeof b.output_format === 'string' ? b.output_format : 'jpeg';
  const base = newVendorTask(ctx, model, { kind: 'images', count: 1, width, height, format }, b.prompt, ESTIMATED_SECONDS[model]);
  const task = Object.assign(base, {
    vendor: 'bfl' as const,
    requestModerated: String(b.prompt).includes('[sim:request-moderated]'),
    seed: typeof b.seed === 'number' ? b.seed : Math.floor(Math.random() * 2 ** 31),
  });
  const outputMp = Math.max(1, Math.ceil((width * height) / 1_000_000));
  const inputMp = Object.keys(b).filter((k) => k.startsWith('input_image') && typeof b[k] === 'string').length;
  const [first, more] = PRICE[model];
  res.json({
    id: task.id,
    // on the host the caller reached, as BFL's are on its API hosts: the file links' public base (SIM_PUBLIC_URL, a
    // browser's address in docker compose) may not be reachable from the worker that polls
    polling_url: `${req.protocol}://${req.get('host')}${req.baseUrl}/v1/get_result?id=${encodeURIComponent(task.id)}`,
    cost: first + more * (outputMp - 1 + inputMp),
    input_mp: inputMp,
    output_mp: outputMp,
  });
}

/** The answer of `GET /v1/get_result` at `now`: a pure function of the task and the clock. */
function resultView(ctx: VendorSimContext, id: string, now: number): Record<string, unknown> {
  const task = ctx.store.get(id) as BflSimTask | undefined;
  if (!task || task.vendor !== 'bfl') return { id, status: 'Task not found', result: null, progress: null };
  const view = (status: string, progress: number | null, result: unknown = null) => ({ id, status, result, progress });
  if (task.requestModerated) return view('Request Moderated', null);
  const s = stateAt(task, now);
  switch (s.status) {
    case 'pending':
      return view('Pending', 0);
    case 'processing':
      return view('Pending', s.progress / 100);
    case 'completed': {
      const end = s.endedAt ?? now;
      const sample = expiringFileUrl(ctx, task, 0, end + SAMPLE_TTL_MS);
      const times = { start_time: task.startedAt / 1000, end_time: end / 1000, duration: (end - task.startedAt) / 1000 };
      return view('Ready', 1, { sample, seed: task.seed, ...times });
    }
    default:
      return view(task.outcome === 'moderation' ? 'Content Moderated' : 'Error', null);
  }
}
