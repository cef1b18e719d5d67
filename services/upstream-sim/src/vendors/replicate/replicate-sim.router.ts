import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { SIM_FAIL_MESSAGE } from '../../sim-scenario';
import type { SimTask } from '../../sim-task.store';
import { simStateAt } from '../../task-view';
import { expiringFileUrl, isCallbackUrl, newVendorTask, rateLimitedOnce, scheduleVendorCallback, vendorAuth, type VendorSimContext } from '../vendor-sim-kit';
import { REPLICATE_SIM_MODELS, type SimModel } from './replicate-sim.models';
import { validateInput } from './replicate-sim.validate';

/**
 * Replicate's predictions API (https://replicate.com/docs/reference/http), mounted under `/replicate`: create by
 * official model (`POST /v1/models/{owner}/{name}/predictions`) or by version (`POST /v1/predictions` with `version`),
 * get, cancel. Errors are RFC 7807 problem details `{title, detail, status}` (replicate-python's ReplicateError reads
 * exactly these). The lifecycle runs on the simulator's clock; output links die an hour after the prediction ended
 * and the prediction's data is removed then too (https://replicate.com/docs/topics/predictions/data-retention).
 */
const HOUR_MS = 3_600_000;
/** (guess) The safety filter's failure text as Replicate's models answer it. */
const REPLICATE_SIM_MODERATION = 'The input or output was flagged as sensitive. Please try again with different inputs. (E005)';

interface Prediction {
  model: string;
  version?: string;
  input: Record<string, unknown>;
  output: SimModel['output'];
}
const predictions = new WeakMap<SimTask, Prediction>();

function problem(res: Response, status: number, title: string, detail: string, extra: Record<string, unknown> = {}): void {
  res
    .status(status)
    .type('application/problem+json')
    .send(JSON.stringify({ title, detail, status, ...extra }));
}

type Status = 'starting' | 'processing' | 'succeeded' | 'failed' | 'canceled';

function view(ctx: VendorSimContext, base: string, task: SimTask, p: Prediction) {
  const now = ctx.now();
  const s = simStateAt(task, now);
  const status: Status = s.cancelled
    ? 'canceled'
    : ({ pending: 'starting', processing: 'processing', completed: 'succeeded', failed: 'failed' } as const)[s.status];
  const removed = s.endedAt !== undefined && now >= s.endedAt + HOUR_MS;
  const urls = Array.from({ length: Math.max(1, task.expected.count) }, (_, i) => expiringFileUrl(ctx, task, i, (s.endedAt ?? now) + HOUR_MS));
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    id: task.id,
    model: p.model,
    version: p.version ?? 'hidden',
    input: removed ? {} : p.input,
    logs: removed || status === 'starting' ? '' : `${s.progress}%|${'#'.repeat(Math.floor(s.progress / 10))}| ${s.progress}/100`,
    output: status === 'succeeded' && !removed ? (p.output === 'one' ? urls[0] : urls) : null,
    data_removed: removed,
    error: status === 'failed' ? (task.outcome === 'moderation' ? REPLICATE_SIM_MODERATION : SIM_FAIL_MESSAGE) : null,
    status,
    created_at: iso(task.startedAt),
    ...(status !== 'starting' ? { started_at: iso(task.startedAt + 1) } : {}),
    ...(s.endedAt !== undefined ? { completed_at: iso(s.endedAt) } : {}),
    urls: { get: `${base}/v1/predictions/${task.id}`, cancel: `${base}/v1/predictions/${task.id}/cancel`, web: `https://replicate.com/p/${task.id}` },
  };
}

const WEBHOOK_EVENTS = ['start', 'output', 'logs', 'completed'];

/**
 * `webhook` (an http(s) URL) and `webhook_events_filter` (a subset of start, output, logs, completed) as Replicate
 * documents them (https://replicate.com/docs/topics/webhooks/setup-webhook); the field wording is a guess.
 */
function webhookProblems(body: Record<string, unknown>): Array<{ type: string; field: string; description: string }> {
  const out: Array<{ type: string; field: string; description: string }> = [];
  if (body.webhook !== undefined && !isCallbackUrl(body.webhook)) out.push({ type: 'format', field: 'webhook', description: "Does not match format 'uri'" });
  const f = body.webhook_events_filter;
  if (f !== undefined && (!Array.isArray(f) || !f.every((e) => WEBHOOK_EVENTS.includes(e as string)))) {
    out.push({ type: 'enum', field: 'webhook_events_filter', description: `webhook_events_filter items must be one of: ${WEBHOOK_EVENTS.join(', ')}` });
  }
  return out;
}

/** `owner/name`, `owner/name:version` (a bare 64-hex version id names no model the simulator knows). */
function modelOfVersion(version: unknown): { model: string; version?: string } | undefined {
  if (typeof version !== 'string') return undefined;
  const [model, v] = version.split(':', 2);
  return model && REPLICATE_SIM_MODELS[model] ? { model, ...(v ? { version: v } : {}) } : undefined;
}

export function replicateSimRouter(ctx: VendorSimContext): Router {
  const r = express.Router();
  // `Bearer` is the documented scheme; `Token` the legacy one Replicate still takes (guess)
  r.use(
    vendorAuth(
      ctx,
      (req) => /^(?:Bearer|Token)\s+(.+)$/i.exec(req.header('authorization') ?? '')?.[1]?.trim(),
      (res) => problem(res, 401, 'Unauthenticated', 'You did not pass a valid authentication token'),
    ),
  );
  r.use(express.json({ limit: '30mb' }));
  const base = (req: Request) => `${ctx.publicUrl}${req.baseUrl}`;

  const create = (req: Request, res: Response, model: string, version?: string) => {
    const schema = REPLICATE_SIM_MODELS[model]!;
    const body = req.body as Record<string, unknown> | undefined;
    if (!body || typeof body !== 'object' || body.input === undefined) {
      const invalid = [{ type: 'required', field: '(root)', description: 'input is required' }];
      return problem(res, 422, 'Input validation failed', '- (root): input is required\n', { invalid_fields: invalid });
    }
    const input = body.input as Record<string, unknown>;
    if (rateLimitedOnce(input?.prompt)) {
      res.setHeader('Retry-After', '1');
      return problem(res, 429, 'Request was throttled.', 'Request was throttled. Your rate limit resets in ~1s.');
    }
    const invalid = [...validateInput(schema, input), ...webhookProblems(body)];
    if (invalid.length) {
      return problem(res, 422, 'Input validation failed', invalid.map((f) => `- ${f.field}: ${f.description}\n`).join(''), { invalid_fields: invalid });
    }
    const expected = schema.expected(input);
    const task = newVendorTask(ctx, model, expected, input.prompt, expected.kind === 'videos' ? 90 : 20);
    const p: Prediction = { model, ...(version ? { version } : {}), input, output: schema.output };
    predictions.set(task, p);
    // the webhook: the prediction as GET answers it, once it ends (the simulator sends the `completed` event only)
    const filter = body.webhook_events_filter as string[] | undefined;
    if (typeof body.webhook === 'string' && (filter === undefined || filter.includes('completed'))) {
      const at = base(req);
      scheduleVendorCallback(ctx, task, body.webhook, () => view(ctx, at, task, p));
    }
    ctx.log.info({ taskId: task.id, model }, 'replicate sim prediction created');
    res.status(201).json(view(ctx, base(req), task, p));
  };

  r.post('/v1/models/:owner/:name/predictions', (req, res) => {
    const model = `${String(req.params.owner)}/${String(req.params.name)}`;
    if (!REPLICATE_SIM_MODELS[model]) return problem(res, 404, 'Not found', `Model ${model} not found`);
    create(req, res, model);
  });
  r.post('/v1/predictions', (req, res) => {
    const ref = modelOfVersion((req.body as Record<string, unknown> | undefined)?.version);
    if (!ref)
      return problem(res, 422, 'Invalid version or not permitted', "The specified version does not exist (or perhaps you don't have permission to use it?)");
    create(req, res, ref.model, ref.version);
  });

  const found = (req: Request, res: Response): [SimTask, Prediction] | undefined => {
    const task = ctx.store.get(String(req.params.id));
    const p = task && predictions.get(task);
    if (task && p) return [task, p];
    problem(res, 404, 'Not found', 'The requested prediction was not found');
    return undefined;
  };
  r.get('/v1/predictions/:id', (req, res) => {
    const hit = found(req, res);
    if (hit) res.json(view(ctx, base(req), ...hit));
  });
  // An ended prediction answers as it is (guess: Replicate does not refuse a late cancel)
  r.post('/v1/predictions/:id/cancel', (req, res) => {
    const hit = found(req, res);
    if (!hit) return;
    const now = ctx.now();
    const s = simStateAt(hit[0], now);
    if (s.status !== 'completed' && s.status !== 'failed') hit[0].cancelledAt = now;
    res.json(view(ctx, base(req), ...hit));
  });
  r.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    if ((err as { type?: string }).type === 'entity.parse.failed') return problem(res, 400, 'Bad request', 'The request body is not valid JSON');
    next(err);
  });
  return r;
}
