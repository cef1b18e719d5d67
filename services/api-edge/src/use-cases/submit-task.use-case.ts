import {
  PriceNotFoundError,
  baseContract,
  isModelAllowed,
  quote,
  resolveModel,
  type ModelContract,
  type NormalizedRequest,
  type Operation,
  type Pool,
  type Quote,
} from '@gmg/contracts';
import { DuplicateSubmissionError, type AuthPrincipal, type AvatarBatch, type NewTask, type TaskRecord } from '@gmg/db';
import { DomainError, bodyTooLarge, idempotencyMismatch, isDomainError, violationError } from '@gmg/errors';
import type { ChannelCarryCheck } from './channel-carry.check';
import type { Logger } from '@gmg/logger';
import type { PriceTableCache } from '../pricing/price-table.cache';
import { resolveAssetReferences, type AssetOwnershipDeps } from './asset-ownership.check';
import type { MediaHostCheck } from './media-host.check';
import type { UploadSizeLookup } from '../uploads/upload-size';
import { EXTEND_FIELD, checkExtendSource } from './extend-source.check';
import { pinToSourceTask } from './pin-to-source';
import { parseResponseVersion } from './response-version';
import { discardStoredMedia, externaliseInlineMedia } from '../uploads/inline-media';
import type { UploadImageDeps } from '../uploads/upload-image.use-case';

export interface SubmitTaskDeps {
  tasks: { createWithHold(t: NewTask): Promise<TaskRecord>; get(id: string): Promise<TaskRecord | null> };
  /** Approved avatar assets per account (motion-2.0 `asset_urls`). */
  assets: AssetOwnershipDeps['assets'];
  prices: Pick<PriceTableCache, 'get'>;
  views: { write(t: TaskRecord): Promise<unknown> };
  /** Where large inline media (Base64 / data URIs) is stored before the task row is written (docs/uploads.md). */
  media: UploadImageDeps;
  /**
   * `accepting`: false while the queue's Redis does not answer; `hasRoom`: false while the pool's task backlog is at
   * its cap (libs/queue BACKLOG_CAPS) — a submit is then refused before the hold (503).
   */
  queue: { enqueueTask(pool: Pool, taskId: string): Promise<void>; accepting?(): boolean; hasRoom?(pool: Pool): Promise<boolean> };
  logger: Logger;
  publicBaseUrl: string;
  taskTimeoutSeconds: number;
  newTaskId: () => string;
  now?: () => Date;
  /**
   * Resolves the hosts of the request's media URLs and refuses private ones (docs/security.md). createApp always
   * sets it; optional only so that stub dependencies (the OpenAPI walk) need not resolve anything.
   */
  mediaHosts?: MediaHostCheck;
  /** Sizes of the gateway's own upload links (lumen-2 `size: auto`); absent: such links count as unmeasured URLs. */
  uploadSizes?: UploadSizeLookup;
  /** Whether a channel of the model and group can carry the request (createApp always sets it). */
  carry?: ChannelCarryCheck;
}

export interface SubmitTaskInput {
  principal: AuthPrincipal;
  /** The path the request came in on: a model is only served by the endpoint of its contract. */
  endpoint: string;
  body: unknown;
  requestId: string;
  /** `X-Service-Response-Version` as sent (shape B models only). */
  responseVersion?: string;
  /** The claimed `Idempotency-Key` and request fingerprint: bound to the task, so a second task under it is impossible. */
  idempotency?: { key: string; fingerprint: string };
  /** The checked `callback_url` (docs/webhooks.md), stored on the task. */
  callbackUrl?: string;
  /** The edge request id and trace id, stored on the task for support lookups. */
  origin?: TaskOrigin;
  /** Bytes of the body as sent (the JSON parser's count): checked against the model's own cap. */
  bodyBytes?: number;
}

/** The model's own total-body cap (the route's cap, checked before reading, is the largest of its models'). */
export function checkBodyCap(contract: Pick<ModelContract, 'maxBodyBytes'>, bodyBytes: number | undefined, model: string): void {
  if (bodyBytes !== undefined && bodyBytes > contract.maxBodyBytes) throw bodyTooLarge(contract.maxBodyBytes, `model '${model}'`);
}

/** Where a task came from: the edge's `X-Request-Id` and, with tracing on, `X-Trace-Id`. */
export interface TaskOrigin {
  requestId: string;
  traceId?: string;
}

/** What a task carries besides its request: where it came from and where its webhook goes. */
export interface AcceptExtras {
  origin?: TaskOrigin;
  callbackUrl?: string;
  /** Upload names the request's inline media was stored under (inline-media.ts): deleted when the task is refused. */
  storedMedia?: readonly string[];
  /** An avatar submission's asset rows (and new group): written with the hold, or not at all. */
  avatarBatch?: AvatarBatch;
}

/** What the money step uses of the submit dependencies. */
export type AcceptTaskDeps = Pick<SubmitTaskDeps, 'tasks' | 'prices' | 'views' | 'queue' | 'logger' | 'media' | 'taskTimeoutSeconds' | 'newTaskId' | 'now'>;

export type ShapeA = { code: 200; data: Array<{ status: 'submitted'; task_id: string }> };
export type ShapeB = {
  code: 202;
  request_id: string;
  data: { id: string; object: 'generation.task'; type: 'image'; status: 'pending'; progress: 0; poll_url: string };
};

type Acknowledgement =
  { ack: 'A'; httpStatus: 200; body: ShapeA; taskId: string } | { ack: 'B'; httpStatus: 202; body: ShapeB; taskId: string; responseVersion: string };

/** The acknowledgement and the task it names (the row written, or the earlier one under the Idempotency-Key). */
export type SubmitTaskResult = Acknowledgement & { task: TaskRecord };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const ENDPOINT_OF_OPERATION = { image_generation: 'POST /v1/images/generations', video_generation: 'POST /v1/videos/generations' } as const;

const OPERATION_OF_ENDPOINT: Readonly<Record<string, Operation>> = {
  '/v1/images/generations': 'image_generation',
  '/v1/videos/generations': 'video_generation',
};

const unknownModel = (requested: string) =>
  new DomainError('invalid_request', `\`model\`: unknown model '${requested}'; GET /v1/models lists the models this key can use`, {
    field: 'model',
    rule: 'unknown',
  });

/** The model named by the body, served by this endpoint and callable by this key; else a 400/403. */
function modelFor(body: unknown, endpoint: string, principal: AuthPrincipal): { contract: ModelContract; requested: string } {
  if (!isObject(body)) throw new DomainError('invalid_request', 'Request body must be a JSON object', { field: '' });
  const requested = body.model;
  if (typeof requested !== 'string' || requested.trim() === '') {
    throw new DomainError('invalid_request', '`model` is required: a model name from GET /v1/models', { field: 'model', rule: 'required' });
  }
  const model = resolveModel(requested);
  if (!model) return customModelFor(requested, endpoint, principal);
  if (!model.contract || model.contract.endpoint !== endpoint) {
    const where = model.contract
      ? `; use ${ENDPOINT_OF_OPERATION[model.contract.operation]}`
      : model.actionContracts
        ? '; use POST /v1/artgen/generations/<action> (without `model`)'
        : '';
    throw new DomainError('invalid_request', `\`model\`: '${requested}' is not served by POST ${endpoint}${where}`, {
      field: 'model',
      rule: 'endpoint',
    });
  }
  if (!isModelAllowed(model.id, principal.keyModels, principal.groupModels)) {
    throw new DomainError('permission', `This API key is not allowed to use model '${requested}'`, { field: 'model' });
  }
  return { contract: model.contract, requested };
}

/**
 * Spec 2.4: a name without catalog metadata that the key's model list names exactly is still callable, through
 * the generic base contract of the endpoint it came in on (its canonical id is the name itself). Any other
 * unknown name stays a 400, so a key without a list cannot probe for names.
 */
function customModelFor(requested: string, endpoint: string, principal: AuthPrincipal): { contract: ModelContract; requested: string } {
  const operation = OPERATION_OF_ENDPOINT[endpoint];
  if (!operation || !principal.keyModels?.includes(requested)) throw unknownModel(requested);
  if (principal.groupModels && !principal.groupModels.includes(requested)) {
    throw new DomainError('permission', `This API key is not allowed to use model '${requested}'`, { field: 'model' });
  }
  return { contract: baseContract(requested, operation), requested };
}

/**
 * Submit one generation task: model → permission → contract validation → price quote → hold + task row (one
 * transaction) → task view → queue. Everything that can reject the request happens before money moves, and
 * nothing reaches the queue before the task row is committed.
 */
export async function submitTask(deps: SubmitTaskDeps, input: SubmitTaskInput): Promise<SubmitTaskResult> {
  const { principal } = input;
  const { contract, requested } = modelFor(input.body, input.endpoint, principal);
  const responseVersion = contract.ack === 'B' ? parseResponseVersion(input.responseVersion) : undefined;

  checkBodyCap(contract, input.bodyBytes, requested);
  const outcome = contract.validate(input.body, requested, {
    trustedUrlPrefixes: [`${deps.publicBaseUrl}/v1/uploads/`],
    referenceSizes: await firstReferenceSize(deps, input.body),
  });
  if (!outcome.ok) throw violationError(outcome.violation);
  await deps.mediaHosts?.(outcome.mediaUrls ?? []);
  let request: NormalizedRequest = outcome.value;
  // pixel-v6 extend_from_task_id: a completed pixel-v6 task of this account, checked before any money moves
  const extendSource = await checkExtendSource(deps, principal.accountId, request);
  if (extendSource) request = pinToSourceTask(request, EXTEND_FIELD, extendSource);
  // motion-2.0 asset_urls: approved avatar assets of this account only, also before any money moves; pinned to
  // the channel that approved them, under its own asset references
  request = await resolveAssetReferences(deps, principal.accountId, request);
  const task = await carryAndAccept(deps, principal, contract, request, input);
  return { ...acknowledge(contract.ack, task.id, input.requestId, responseVersion), task };
}

/** The last steps of a checked submission (generations, the art suite): the channel carry check, inline media kept, the money step. */
export async function carryAndAccept(
  deps: SubmitTaskDeps,
  principal: AuthPrincipal,
  contract: Pick<ModelContract, 'inlineMedia'>,
  request: NormalizedRequest,
  input: Pick<SubmitTaskInput, 'idempotency' | 'origin' | 'callbackUrl'>,
): Promise<TaskRecord> {
  // a field or action no eligible channel's protocol can carry is the client's 400 now, not a refunded failure later
  await deps.carry?.(request, principal.groupName);
  // last before the money step: every refusal above leaves nothing stored, and acceptTask deletes it on a refusal
  const media = await externaliseInlineMedia(deps.media, contract, request, principal.accountId);
  return acceptTask(deps, principal, media.request, input.idempotency, { origin: input.origin, callbackUrl: input.callbackUrl, storedMedia: media.stored });
}

/**
 * `size: auto` follows the first reference image's ratio (lumen-2): when that reference is one of our own uploads,
 * its stored size. Any other URL stays unmeasured (the gateway does not fetch client URLs; the upstream measures it).
 */
async function firstReferenceSize(deps: SubmitTaskDeps, body: unknown): Promise<Map<string, { width: number; height: number }> | undefined> {
  if (!deps.uploadSizes || !isObject(body) || body.size !== 'auto' || !Array.isArray(body.image_urls)) return undefined;
  const first: unknown = body.image_urls[0];
  if (typeof first !== 'string') return undefined;
  const size = await deps.uploadSizes(first);
  return size ? new Map([[first, size]]) : undefined;
}

/**
 * The money step every submission shares (generations, the art suite, avatar batches): quote → hold + task row (one transaction)
 * → task view → queue. Returns the task; under a reused Idempotency-Key whose Redis record was lost, the first
 * task (nothing held). Media stored for this request (`extras.storedMedia`) is deleted when no task of
 * this request refers to it: a refusal here (402, the in-flight limit, an unpriced model, a reused key) or the
 * first task's answer. An unexpected error keeps it (the row may have been committed); it expires with the link.
 */
export async function acceptTask(
  deps: AcceptTaskDeps,
  principal: AuthPrincipal,
  request: NormalizedRequest,
  idempotency: SubmitTaskInput['idempotency'],
  extras: AcceptExtras = {},
): Promise<TaskRecord> {
  const stored = extras.storedMedia ?? [];
  let accepted: { task: TaskRecord; created: boolean };
  try {
    accepted = await holdAndRecord(deps, principal, request, idempotency, extras);
  } catch (err) {
    if (stored.length > 0 && isDomainError(err)) await discardStoredMedia(deps.media.storage, stored, deps.logger);
    throw err;
  }
  if (!accepted.created && stored.length > 0) await discardStoredMedia(deps.media.storage, stored, deps.logger);
  return accepted.task;
}

/** Quote, then the hold and the task row; `created: false` when an earlier task under the Idempotency-Key answers. */
async function holdAndRecord(
  deps: AcceptTaskDeps,
  principal: AuthPrincipal,
  request: NormalizedRequest,
  idempotency: SubmitTaskInput['idempotency'],
  extras: AcceptExtras,
): Promise<{ task: TaskRecord; created: boolean }> {
  const price = await quoteOrUnavailable(deps, request, principal.priceRatio);
  // Redis black-holed or away (issue 38): no hold for a task that cannot be queued now — a retryable 503, nothing
  // charged. (A Redis lost after this check still finds the task: publishAccepted's note.)
  if (deps.queue.accepting && !deps.queue.accepting()) {
    throw new DomainError('service_unavailable', 'The task queue is not answering right now; nothing was charged. Retry later.', { retryAfter: 1 });
  }
  // the pool's backlog at its cap (workers down or far behind): no new work into Redis, nothing charged
  if (deps.queue.hasRoom && !(await deps.queue.hasRoom(request.pool))) {
    throw new DomainError('service_unavailable', `The ${request.pool} task queue is full; nothing was charged. Retry later.`, { retryAfter: 5 });
  }
  const now = (deps.now ?? (() => new Date()))();
  let task: TaskRecord;
  try {
    task = await deps.tasks.createWithHold({
      id: deps.newTaskId(),
      accountId: principal.accountId,
      apiKeyId: principal.keyId,
      model: request.model,
      requestedModel: request.requestedModel,
      pool: request.pool,
      request,
      price: price.total,
      priceSnapshot: { total: price.total.toString(), ratio: price.ratio, lines: price.lines },
      deadlineAt: new Date(now.getTime() + deps.taskTimeoutSeconds * 1000),
      idempotencyKey: idempotency?.key,
      idempotencyFingerprint: idempotency?.fingerprint,
      ...extras.origin,
      callbackUrl: extras.callbackUrl,
      inflightLimit: principal.inflightLimit,
      cap: principal.cap,
      avatarBatch: extras.avatarBatch,
    });
  } catch (err) {
    // The Redis idempotency record answers replays; when it was lost, the database refuses the second task
    // (nothing held) and the client gets the acknowledgement of the first one.
    if (!(err instanceof DuplicateSubmissionError)) throw err;
    if (!err.sameRequest) throw idempotencyMismatch();
    deps.logger.warn({ taskId: err.existing.id }, 'Idempotency-Key reused without its Redis record; answering with the existing task');
    return { task: err.existing, created: false };
  }

  await publishAccepted(deps, task);
  return { task, created: true };
}

/**
 * After the commit of an accepted task (every submission path): Postgres is the record from here on, so a failed
 * view write or enqueue must not turn an accepted, paid task into an error. Polling falls back to Postgres, and the
 * worker sweeper's reconciler re-adds pending tasks without a job (jobId = taskId makes that idempotent).
 */
export async function publishAccepted(deps: Pick<SubmitTaskDeps, 'views' | 'queue' | 'logger'>, task: TaskRecord): Promise<void> {
  // Both at once (one Redis round trip, one socket write with auto-pipelining): a worker that picks the job first
  // and writes a newer view is safe, since a view write never replaces a newer version (TaskViewStore).
  await Promise.all([
    deps.views.write(task).catch((err: unknown) => deps.logger.warn({ err, taskId: task.id }, 'task view write failed after submit')),
    deps.queue
      .enqueueTask(task.pool, task.id)
      .catch((err: unknown) => deps.logger.error({ err, taskId: task.id, pool: task.pool }, 'enqueue failed after commit; the reconciler will re-add the job')),
  ]);
}

/** Acknowledgement shape A, or B with HTTP 202 (spec 2.1); also rebuilds a stored answer (middleware/task-answer.shapes.ts). */
export function acknowledge(ack: string, taskId: string, requestId: string, responseVersion: string | undefined): Acknowledgement {
  if (ack === 'B') {
    return {
      ack: 'B',
      httpStatus: 202,
      taskId,
      responseVersion: responseVersion!,
      body: {
        code: 202,
        request_id: requestId,
        data: { id: taskId, object: 'generation.task', type: 'image', status: 'pending', progress: 0, poll_url: `/v1/tasks/${taskId}` },
      },
    };
  }
  return { ack: 'A', httpStatus: 200, taskId, body: { code: 200, data: [{ status: 'submitted', task_id: taskId }] } };
}

export async function quoteOrUnavailable(deps: Pick<SubmitTaskDeps, 'prices' | 'logger'>, request: NormalizedRequest, ratio: number): Promise<Quote> {
  const table = await deps.prices.get();
  try {
    return quote(request.billing, table, ratio);
  } catch (err) {
    if (!(err instanceof PriceNotFoundError)) throw err;
    // An operator mistake, not the client's: loud in the log, a retryable 503 for the client.
    deps.logger.error({ model: request.model, keys: err.keys }, 'model not priced: no price for any billing key');
    throw new DomainError('service_unavailable', `Model '${request.requestedModel}' is temporarily unavailable (model not priced)`);
  }
}
