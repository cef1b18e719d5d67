import express, { type Request, type Response } from 'express';
import type { ExpectedOutput } from '@gmg/contracts';
import { SIM_FAIL_MESSAGE, SIM_MODERATION_MESSAGE } from '../../sim-scenario';
import type { SimTask } from '../../sim-task.store';
import { simStateAt } from '../../task-view';
import { expiringFileUrl, isCallbackUrl, newVendorTask, rateLimitedOnce, scheduleVendorCallback, vendorAuth, type VendorSimContext } from '../vendor-sim-kit';
import { FAL_SIM_ENDPOINTS, falInputErrors, type FalSimEndpoint } from './fal-sim.endpoints';

/**
 * Result links live an hour. fal does not publish a lifetime for its CDN files (fal.media); an hour is shorter than
 * the spec's 24 h, so the gateway must keep the files, which is what this mode exists to prove.
 */
export const FAL_LINK_TTL_MS = 3600_000;

/** What a submit carried, for tests (the request fal saw). */
export interface FalSimSubmit {
  endpoint: string;
  authorization?: string;
  input: unknown;
}

type FalTask = SimTask & { falApp: string; falFormat: string };

const detail = (res: Response, status: number, body: unknown) => res.status(status).json(body);

/** What the input asks for, as the simulator's task needs it (count, size, format, length). */
function expectedOf(ep: FalSimEndpoint, input: Record<string, unknown>): ExpectedOutput {
  if (ep.kind === 'videos') {
    const seconds =
      typeof input.duration === 'number' ? input.duration : parseInt(typeof input.duration === 'string' ? input.duration : String(ep.seconds ?? 5), 10);
    return { kind: 'videos', count: 1, format: 'mp4', durationSeconds: Number.isFinite(seconds) && seconds > 0 ? seconds : 5 };
  }
  const size = input.image_size as { width?: number; height?: number } | undefined;
  const format = typeof input.output_format === 'string' ? input.output_format : (ep.format ?? 'jpeg');
  const count = typeof input.num_images === 'number' ? input.num_images : 1;
  return { kind: 'images', count, format, width: size?.width ?? 1024, height: size?.height ?? 1024 };
}

/**
 * fal's queue API (https://docs.fal.ai/model-endpoints/queue), mounted under `/fal`: a channel's base_url is
 * `http://<sim>/fal`. Strict: `Authorization: Key <key>`, a known endpoint id, inputs as its fal page lists them.
 */
export function falSimRouter(ctx: VendorSimContext, hooks: { onSubmit?: (s: FalSimSubmit) => void } = {}): express.Router {
  const router = express.Router();
  router.use(
    vendorAuth(
      ctx,
      (req) => /^Key (\S+)$/.exec(req.header('authorization') ?? '')?.[1],
      (res) => detail(res, 401, { detail: 'Invalid or missing credentials: send Authorization: Key <FAL_KEY>' }),
    ),
  );
  router.use(express.json({ limit: '30mb' }));

  const find = (req: Request, res: Response): FalTask | undefined => {
    const app = `${String(req.params.owner)}/${String(req.params.name)}`;
    const task = ctx.store.get(String(req.params.id)) as FalTask | undefined;
    if (task?.falApp === app) return task;
    detail(res, 404, { detail: 'Request not found' });
    return undefined;
  };
  const urls = (app: string, id: string) => {
    const base = `${ctx.publicUrl}/fal/${app}/requests/${id}`;
    return { response_url: base, status_url: `${base}/status`, cancel_url: `${base}/cancel` };
  };

  router.get('/:owner/:name/requests/:id/status', (req, res) => {
    const task = find(req, res);
    if (!task) return;
    const s = simStateAt(task, ctx.now());
    const links = urls(task.falApp, task.id);
    if (s.status === 'pending') return res.json({ status: 'IN_QUEUE', queue_position: 0, ...links });
    if (s.status === 'processing') return res.json({ status: 'IN_PROGRESS', logs: [{ message: `progress ${s.progress}%`, level: 'INFO' }], ...links });
    res.json({ status: 'COMPLETED', logs: [], metrics: { inference_time: task.durationMs / 1000 }, ...links });
  });

  router.get('/:owner/:name/requests/:id', (req, res) => {
    const task = find(req, res);
    if (task) answerResult(ctx, task, res);
  });

  router.put('/:owner/:name/requests/:id/cancel', (req, res) => {
    const task = find(req, res);
    if (!task) return;
    const at = ctx.now();
    // fal cancels only what has not started processing
    if (simStateAt(task, at).status !== 'pending') return detail(res, 400, { status: 'ALREADY_COMPLETED' });
    task.cancelledAt = at;
    res.status(202).json({ status: 'CANCELLATION_REQUESTED' });
  });

  router.post('/{*endpoint}', (req, res) => {
    const endpoint = ([] as string[]).concat(req.params.endpoint as unknown as string[]).join('/');
    const ep = FAL_SIM_ENDPOINTS[endpoint];
    if (!ep) return detail(res, 404, { detail: `Application '${endpoint}' not found` });
    const input: unknown = req.body;
    hooks.onSubmit?.({ endpoint, authorization: req.header('authorization'), input });
    const prompt = (input as { prompt?: unknown } | undefined)?.prompt;
    if (rateLimitedOnce(prompt)) return res.status(429).set('Retry-After', '1').json({ detail: 'Rate limit exceeded', error_type: 'rate_limited' });
    const errors = falInputErrors(ep, input);
    const webhook = req.query.fal_webhook;
    // (guess) fal refuses a webhook that is not one absolute http(s) URL as a request error
    if (webhook !== undefined && !isCallbackUrl(webhook)) {
      errors.push({ loc: ['query', 'fal_webhook'], msg: 'invalid or missing URL scheme', type: 'value_error.url.scheme' });
    }
    if (errors.length) return detail(res, 422, { detail: errors.map((e) => ({ ...e, url: 'https://docs.fal.ai/errors' })) });
    const body = input as Record<string, unknown>;
    const expected = expectedOf(ep, body);
    // the stored task itself gains the fields (Object.assign mutates it): polls find its app and format
    const task: FalTask = Object.assign(newVendorTask(ctx, endpoint, expected, prompt, 0), {
      falApp: endpoint.split('/').slice(0, 2).join('/'),
      falFormat: expected.format ?? 'jpeg',
    });
    if (typeof webhook === 'string') scheduleVendorCallback(ctx, task, webhook, () => webhookBody(ctx, task));
    ctx.log.info({ taskId: task.id, endpoint }, 'fal sim request queued');
    res.json({ request_id: task.id, ...urls(task.falApp, task.id), queue_position: 0 });
  });

  return router;
}

/** The response URL's answer: 400 before the end, else the result, or the failure as fal answers it. */
function resultOf(ctx: VendorSimContext, task: FalTask): { status: number; body: unknown } {
  const s = simStateAt(task, ctx.now());
  if (s.status === 'pending' || s.status === 'processing') return { status: 400, body: { detail: 'Request is still in progress' } };
  if (s.cancelled) return { status: 499, body: { detail: 'Request was cancelled', error_type: 'client_cancelled' } };
  const expiresAt = (s.endedAt ?? ctx.now()) + FAL_LINK_TTL_MS;
  const n = Math.max(1, task.expected.count);
  if (task.outcome === 'fail') return { status: 500, body: { detail: SIM_FAIL_MESSAGE, error_type: 'runner_server_error' } };
  if (task.outcome === 'moderation' && task.expected.kind === 'videos') {
    const flagged = {
      loc: ['body', 'prompt'],
      msg: SIM_MODERATION_MESSAGE,
      type: 'content_policy_violation',
      url: 'https://docs.fal.ai/errors#content_policy_violation',
    };
    return { status: 422, body: { detail: [flagged] } };
  }
  if (task.expected.kind === 'videos') {
    return { status: 200, body: { video: { url: expiringFileUrl(ctx, task, 0, expiresAt), content_type: 'video/mp4', file_name: 'output.mp4' }, seed: 42 } };
  }
  const type = `image/${task.falFormat === 'jpg' ? 'jpeg' : task.falFormat}`;
  const images = Array.from({ length: n }, (_, i) => ({
    url: expiringFileUrl(ctx, task, i, expiresAt),
    content_type: type,
    width: task.expected.width,
    height: task.expected.height,
  }));
  // fal's safety checker answers the images with a flag (the files are blacked out)
  return { status: 200, body: { images, seed: 42, has_nsfw_concepts: images.map(() => task.outcome === 'moderation') } };
}

function answerResult(ctx: VendorSimContext, task: FalTask, res: Response): void {
  const r = resultOf(ctx, task);
  res.status(r.status).json(r.body);
}

/**
 * fal's webhook body (https://docs.fal.ai/model-endpoints/webhooks): `{request_id, gateway_request_id, status: OK |
 * ERROR, payload, error}`, the payload being the result (or the failure's detail).
 */
function webhookBody(ctx: VendorSimContext, task: FalTask): unknown {
  const r = resultOf(ctx, task);
  const ok = r.status === 200;
  return {
    request_id: task.id,
    gateway_request_id: task.id,
    status: ok ? 'OK' : 'ERROR',
    payload: r.body,
    error: ok ? null : `Invalid status code: ${r.status}`,
  };
}
