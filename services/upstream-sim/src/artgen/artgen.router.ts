import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { artgenNativeAction, isArtgenFollowUp, isArtgenPathAction, parseArtgenCustomId, type ArtgenPathAction, type ErrorType } from '@gmg/contracts';
import type { Logger } from '@gmg/logger';
import { bearerGuard } from '../bearer-guard';
import type { VideoRenderer } from '../media/video-renderer';
import type { SimKeys } from '../sim-keys';
import { durationMs, parseMarkers, type SimMarkers } from '../sim-scenario';
import { sendArtError, sendError } from '../sim-errors';
import { describeDelayMs, describeText } from './artgen-describe';
import { planTask, type ArtRefusal } from './artgen-plan';
import { ArtRenderer, artFilesHandler } from './artgen-render';
import { ArtgenStore, newArtTaskId, seedOf, type ArtAnswer, type ArtTask } from './artgen-task';
import { artStateAt, nativeView, unifiedArtView } from './artgen-view';

export interface ArtgenRouterDeps {
  timeScale: number;
  /** Base of result links, no trailing slash. */
  publicUrl: string;
  apiKey?: string;
  /** The simulator's key book (SIM_API_KEYS, POST /__sim/keys): when given, it guards instead of `apiKey`. */
  keys?: SimKeys;
  maxTasks?: number;
  now: () => number;
  /** Describe's wait (node's timer unless injected). */
  sleep?: (ms: number) => Promise<void>;
  log: Logger;
  videos: VideoRenderer;
}

type Body = Record<string, unknown>;

/** The bearer guard of the art routes: the key book's (several keys, revocations) or the one `apiKey`'s; none without either. */
function guardOf(
  deps: Pick<ArtgenRouterDeps, 'apiKey' | 'keys'>,
  deny: (res: Response, status: number, type: ErrorType, message: string) => void,
): RequestHandler[] {
  if (deps.keys?.configured) return [deps.keys.bearer(deny)];
  return deps.apiKey ? [bearerGuard(deps.apiKey, (res) => deny(res, 401, 'authentication_error', 'invalid or missing API key'))] : [];
}

class Refused extends Error {
  constructor(readonly refusal: ArtRefusal | { status: 503; type: 'service_unavailable'; message: string }) {
    super(refusal.message);
  }
}

const notFound = (id: string) => new Refused({ status: 404, type: 'not_found', message: `task ${id} not found` });
const invalid = (message: string) => new Refused({ status: 400, type: 'invalid_request_error', message });

/**
 * The art suite as an upstream speaks it (ARTGEN-PROTOCOL.md): submit paths, `/action` by customId, the native view,
 * the unified view of art tasks, and their files. Mounted at the app root, ahead of the generic routes.
 */
export function artgenRouter(deps: ArtgenRouterDeps): express.Router {
  const store = new ArtgenStore(deps.maxTasks);
  const art = new ArtRenderer();
  const { now, log } = deps;
  const wait = deps.sleep ?? sleep;

  /** `[sim:error503]` answers 503 every time, `[sim:error503once]` once per idempotency key (or body). */
  function check503(markers: SimMarkers, key: string | undefined, body: Body, action: string): void {
    if (!markers.submit503) return;
    const failKey =
      key ??
      createHash('sha256')
        .update(`${action}\n${JSON.stringify(body)}`)
        .digest('hex');
    if (markers.submit503 === 'always' || store.firstFailure(failKey)) {
      throw new Refused({ status: 503, type: 'service_unavailable', message: 'upstream temporarily unavailable (simulated)' });
    }
  }

  function parentOf(b: Body): ArtTask {
    if (typeof b.task_id !== 'string' || !b.task_id) throw invalid('`task_id` is required');
    const p = store.get(b.task_id);
    if (!p) throw notFound(b.task_id);
    return p;
  }

  async function create(action: ArtgenPathAction, b: Body, key: string | undefined): Promise<ArtAnswer> {
    const p = isArtgenFollowUp(action) ? parentOf(b) : undefined;
    const planned = planTask(action, b, p ? { task: p, status: artStateAt(p, now()).status } : undefined);
    if (!planned.ok) throw new Refused(planned.refusal);
    const plan = planned.plan;
    check503(plan.markers, key, b, action);
    const id = newArtTaskId();
    const task: ArtTask = {
      id,
      action,
      prompt: plan.prompt,
      seed: plan.seed ?? seedOf(id),
      output: plan.output,
      markers: plan.markers,
      submitTime: now(),
      ...(plan.version !== undefined ? { version: plan.version } : {}),
      ...(plan.parentId ? { parentId: plan.parentId } : {}),
    };
    const data: Body = { task_id: id, action: artgenNativeAction(action), status: 'SUBMITTED' };
    if (plan.output.kind === 'text') {
      // Describe is synchronous: the answer comes after 1-3 s (scaled) and carries the text.
      const delay = describeDelayMs(b.image_urls as string[], deps.timeScale);
      await wait(delay);
      task.run = { startedAt: task.submitTime, durationMs: delay, outcome: plan.markers.outcome };
      const s = artStateAt(task, now());
      const text = describeText(plan.output.prompts);
      Object.assign(
        data,
        { status: s.status, prompt: text, description: text, prompts: plan.output.prompts },
        s.failReason ? { fail_reason: s.failReason } : {},
      );
    } else if (plan.awaitsModal) {
      data.status = 'MODAL';
    } else {
      task.run = {
        startedAt: task.submitTime,
        durationMs: durationMs(plan.timing.kind, plan.timing.estimatedSeconds, plan.markers, deps.timeScale),
        outcome: plan.markers.outcome,
      };
    }
    store.add(task);
    log.debug({ taskId: id, action, parentId: plan.parentId, outcome: plan.markers.outcome }, 'sim art task submitted');
    return { status: 200, body: { code: 200, data } };
  }

  /** `/modal` completes a MODAL (inpaint) task under the same id: MODAL → IN_PROGRESS → SUCCESS. */
  function modal(b: Body, key: string | undefined): ArtAnswer {
    const task = parentOf(b);
    const status = artStateAt(task, now()).status;
    if (status !== 'MODAL') throw invalid(`task ${task.id} is ${status}, not MODAL; modal completes a task waiting in MODAL`);
    if (b.mask_url !== undefined && typeof b.mask_url !== 'string') throw invalid('`mask_url` must be a string');
    const own = typeof b.prompt === 'string' ? b.prompt : undefined;
    const markers = own !== undefined ? parseMarkers(own) : task.markers;
    check503(markers, key, b, 'modal');
    task.prompt = own ?? task.prompt;
    task.markers = markers;
    task.run = { startedAt: now(), durationMs: durationMs('images', 60, markers, deps.timeScale), outcome: markers.outcome };
    return { status: 200, body: { code: 200, data: { task_id: task.id, action: 'MODAL', status: 'SUBMITTED' } } };
  }

  /** Answers being made, by Idempotency-Key: a retry that arrives while describe still runs joins the first. */
  const inFlight = new Map<string, Promise<ArtAnswer>>();

  /** Runs one action; a replayed Idempotency-Key answers its first answer and creates nothing. */
  async function submit(action: ArtgenPathAction, req: Request, res: Response): Promise<void> {
    const b: unknown = req.body;
    if (typeof b !== 'object' || b === null || Array.isArray(b)) return sendArtError(res, 400, 'invalid_request_error', 'request body must be a JSON object');
    const key = req.header('idempotency-key') || undefined;
    const previous = key ? store.answerFor(key) : undefined;
    if (previous) {
      res.status(previous.status).json(previous.body);
      return;
    }
    let work = key ? inFlight.get(key) : undefined;
    if (!work) {
      work = action === 'modal' ? Promise.resolve().then(() => modal(b as Body, key)) : create(action, b as Body, key);
      if (key) {
        inFlight.set(key, work);
        void work
          .then(
            (a) => store.remember(key, a),
            () => undefined,
          )
          .finally(() => inFlight.delete(key));
      }
    }
    try {
      const answer = await work;
      res.status(answer.status).json(answer.body);
    } catch (e) {
      if (!(e instanceof Refused)) throw e;
      sendArtError(res, e.refusal.status, e.refusal.type, e.refusal.message);
    }
  }

  const api = express.Router();
  for (const guard of guardOf(deps, sendArtError)) api.use(guard);
  api.use(express.json({ limit: '30mb' }));
  api.post('/generations', (req, res) => submit('imagine', req, res));
  api.post('/generations/:action', async (req, res) => {
    const name = String(req.params.action);
    if (name === 'action') {
      const b = (req.body ?? {}) as Body;
      const parsed = parseArtgenCustomId(b.customId);
      if (!parsed) return sendArtError(res, 400, 'invalid_request_error', '`customId` is not a button of this suite');
      // The customId names the action and its fields; its job hash is not checked (the parent is `task_id`).
      const { action, hash: _hash, ...fields } = parsed;
      req.body = { ...b, ...fields };
      return submit(action, req, res);
    }
    if (!isArtgenPathAction(name)) return sendArtError(res, 404, 'not_found', `unknown art action \`${name}\``);
    return submit(name, req, res);
  });
  api.get('/:id', (req, res) => {
    const task = store.get(String(req.params.id));
    if (!task) return sendArtError(res, 404, 'not_found', `task ${String(req.params.id)} not found`);
    res.json(nativeView(task, now(), deps.publicUrl));
  });
  api.use((_req: Request, res: Response) => sendArtError(res, 404, 'not_found', 'route not found'));
  api.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const e = err as { type?: string };
    if (e.type === 'entity.parse.failed') return sendArtError(res, 400, 'invalid_request_error', 'request body is not valid JSON');
    if (e.type === 'entity.too.large') return sendArtError(res, 413, 'invalid_request_error', 'request body is too large');
    log.error({ err }, 'sim art request failed');
    sendArtError(res, 500, 'internal_error', 'internal error');
  });

  const r = express.Router();
  r.get('/files/:name', artFilesHandler({ art, videos: deps.videos, log }));
  r.use('/v1/artgen', api);
  // Art tasks are also unified tasks; other ids fall through to the generic /v1/tasks route.
  const tasksGuard = guardOf(deps, sendError);
  r.get('/v1/tasks/:id', ...tasksGuard, (req: Request, res: Response, next: NextFunction) => {
    const task = store.get(String(req.params.id));
    if (!task) return next();
    res.json({ code: 200, data: unifiedArtView(task, now(), deps.publicUrl) });
  });
  return r;
}
