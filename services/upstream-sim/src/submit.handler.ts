import { createHash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type { ModelDefinition, ValidateOptions, ValidationOutcome } from '@gmg/contracts';
import type { Logger } from '@gmg/logger';
import { unknownAssetProblem } from './avatar/avatar-review';
import { measureReference } from './media/reference-size';
import { deliveredOutput, durationMs, parseMarkers } from './sim-scenario';
import { newTaskId, type SimTask, type SimTaskStore } from './sim-task.store';
import { sendError } from './sim-errors';

/** The part of the model registry the simulator uses (injectable for tests). */
export interface SimModels {
  resolveModel(name: string): ModelDefinition | undefined;
  validateRequest(model: ModelDefinition, body: unknown, requestedModel: string, opts?: ValidateOptions): ValidationOutcome;
}

export interface SubmitDeps {
  store: SimTaskStore;
  models: SimModels;
  timeScale: number;
  now: () => number;
  log: Logger;
  /** Measures a reference image by URL (lumen-2 `size: auto`); default: fetch its header. */
  measure?: (url: string) => Promise<{ width: number; height: number } | undefined>;
}

// Any http(s) reference is acceptable here (the gateway in front of it sends its own upload links, which may be on
// loopback in local runs). The simulator fetches one only to measure it (`size: auto`).
const VALIDATE_OPTS: ValidateOptions = { trustedUrlPrefixes: ['http://', 'https://'] };

/** `size: auto` with a URL first reference: that reference measured, as the upstream does; null when unreadable. */
async function autoReferenceSizes(b: Record<string, unknown>, measure: NonNullable<SubmitDeps['measure']>) {
  const first: unknown = Array.isArray(b.image_urls) ? b.image_urls[0] : undefined;
  if (b.size !== 'auto' || typeof first !== 'string' || !/^https?:\/\//i.test(first)) return undefined;
  const size = await measure(first);
  return size ? new Map([[first, size]]) : null;
}

function sendAck(res: Response, task: SimTask): void {
  if (task.ack === 'B') {
    res.status(202).json({
      code: 202,
      request_id: `req_${task.id.slice(5)}`,
      data: { id: task.id, object: 'generation.task', type: 'image', status: 'pending', progress: 0, poll_url: `/v1/tasks/${task.id}` },
    });
  } else if (task.ack === 'C') {
    res.json({ code: 200, data: { id: task.id, object: 'motion.avatar.asset.task', status: 'processing', progress: 0, model: task.model } });
  } else {
    res.json({ code: 200, data: [{ status: 'submitted', task_id: task.id }] });
  }
}

/** POST /v1/images/generations and /v1/videos/generations: validate with the registry, answer the model's ack. */
export function submitHandler(deps: SubmitDeps): RequestHandler {
  const measure = deps.measure ?? ((url: string) => measureReference(url));
  return async (req: Request, res: Response) => {
    const body: unknown = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return sendError(res, 400, 'invalid_request_error', 'request body must be a JSON object');
    }
    const b = body as Record<string, unknown>;
    const name = typeof b.model === 'string' ? b.model : '';
    if (!name) return sendError(res, 400, 'invalid_request_error', '`model` is required');
    const model = deps.models.resolveModel(name);
    if (!model?.contract) return sendError(res, 400, 'invalid_request_error', `model \`${name}\` is not served by this endpoint`);
    if (model.contract.endpoint !== `${req.baseUrl}${req.path}`) {
      return sendError(res, 400, 'invalid_request_error', `model \`${name}\` is served at ${model.contract.method} ${model.contract.endpoint}`);
    }

    const key = req.header('idempotency-key') || undefined;
    if (key) {
      const previous = deps.store.byKey(key);
      if (previous) return sendAck(res, previous);
    }

    const referenceSizes = await autoReferenceSizes(b, measure);
    if (referenceSizes === null) {
      return sendError(
        res,
        400,
        'invalid_request_error',
        '`image_urls.0`: the first reference image could not be fetched or read, so `size: auto` has no ratio to follow',
      );
    }
    const outcome = deps.models.validateRequest(model, body, name, { ...VALIDATE_OPTS, ...(referenceSizes ? { referenceSizes } : {}) });
    if (!outcome.ok) return sendError(res, outcome.violation.status, outcome.violation.type, outcome.violation.message);
    const assetProblem = unknownAssetProblem(b.asset_urls, (id) => deps.store.get(id), deps.now());
    if (assetProblem) return sendError(res, 400, 'invalid_request_error', assetProblem);

    const markers = parseMarkers(b.prompt);
    if (markers.submit503) {
      const failKey = key ?? createHash('sha256').update(JSON.stringify(body)).digest('hex');
      if (markers.submit503 === 'always' || deps.store.firstFailure(failKey)) {
        return sendError(res, 503, 'service_unavailable', 'upstream temporarily unavailable (simulated)');
      }
    }

    const norm = outcome.value;
    const task: SimTask = {
      id: newTaskId(),
      model: norm.requestedModel,
      ack: model.contract.ack,
      // What the task delivers: `[sim:partial]` gives less than the request asked (and the gateway billed).
      expected: deliveredOutput(norm.expected, markers),
      outcome: markers.outcome,
      startedAt: deps.now(),
      durationMs: durationMs(norm.expected.kind, model.contract.estimatedSeconds, markers, deps.timeScale),
    };
    deps.store.add(task, key);
    deps.log.debug({ taskId: task.id, model: task.model, outcome: task.outcome, durationMs: task.durationMs }, 'sim task submitted');
    sendAck(res, task);
  };
}
