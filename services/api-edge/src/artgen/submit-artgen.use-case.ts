import {
  ARTGEN_CONTRACTS,
  applyArtgenParent,
  artgenNativeAction,
  isArtgenFollowUp,
  isArtgenPathAction,
  isModelAllowed,
  parseArtgenCustomId,
  type ArtgenPathAction,
  type NormalizedRequest,
} from '@gmg/contracts';
import type { AuthPrincipal, TaskRecord } from '@gmg/db';
import { DomainError, violationError } from '@gmg/errors';
import { artgenJobHash, artgenParentFacts } from '@gmg/tasks';
import { pinToSourceTask } from '../use-cases/pin-to-source';
import { carryAndAccept, checkBodyCap, type SubmitTaskDeps, type TaskOrigin } from '../use-cases/submit-task.use-case';

export const ARTGEN_MODEL = 'artgen';

export interface ArtgenSubmitInput {
  principal: AuthPrincipal;
  /** A path action, or `action` for a customId follow-up. */
  action: ArtgenPathAction | 'action';
  body: unknown;
  /** The claimed `Idempotency-Key` and request fingerprint (see submitTask). */
  idempotency?: { key: string; fingerprint: string };
  origin?: TaskOrigin;
  /** The checked `callback_url` (docs/webhooks.md). */
  callbackUrl?: string;
  /** Bytes of the body as sent: checked against the action's own cap. */
  bodyBytes?: number;
}

export interface ArtgenAccepted {
  taskId: string;
  action: ArtgenPathAction;
  /** The task row (written, or the earlier one under the Idempotency-Key). */
  task: TaskRecord;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Foreign and missing parents give the same answer: it must not reveal which. */
const parentNotFound = (id: string) => new DomainError('artgen_not_found', `Task ${id} not found`);

/**
 * One art suite submission: key allowed for `artgen` → contract of the action → parent (own account, right state,
 * version, tile) → pin to the parent's channel under its upstream id → hold + task + queue. Every refusal happens
 * before money moves.
 */
export async function submitArtgen(deps: SubmitTaskDeps, input: ArtgenSubmitInput): Promise<ArtgenAccepted> {
  const { principal } = input;
  if (!isModelAllowed(ARTGEN_MODEL, principal.keyModels, principal.groupModels)) {
    throw new DomainError('permission', `This API key is not allowed to use model '${ARTGEN_MODEL}'`, { field: 'model' });
  }
  if (!isObject(input.body)) throw new DomainError('invalid_request', 'Request body must be a JSON object', { field: '' });
  const body = withoutModel(input.body);
  const { action, fields, parent } =
    input.action === 'action' ? await fromCustomId(deps, principal, body) : { action: input.action, fields: body, parent: undefined };

  const contract = ARTGEN_CONTRACTS[action];
  checkBodyCap(contract, input.bodyBytes, `${ARTGEN_MODEL} ${action}`);
  const outcome = contract.validate(fields, ARTGEN_MODEL, { trustedUrlPrefixes: [`${deps.publicBaseUrl}/v1/uploads/`] });
  if (!outcome.ok) throw violationError(outcome.violation);
  await deps.mediaHosts?.(outcome.mediaUrls ?? []);
  let request: NormalizedRequest = outcome.value;
  if (isArtgenFollowUp(action)) {
    const source = parent ?? (await ownTask(deps, principal, String(fields.task_id)));
    const checked = applyArtgenParent(request, artgenParentFacts(source));
    if (!checked.ok) throw violationError(checked.violation);
    request = pinToSourceTask(checked.value, 'task_id', source);
  }
  const task = await carryAndAccept(deps, principal, contract, request, input);
  return { taskId: task.id, action, task };
}

/** Requests omit `model` (it is artgen); sending `artgen` anyway is tolerated, another name is a mistake. */
function withoutModel(body: Record<string, unknown>): Record<string, unknown> {
  if (body.model === undefined) return body;
  if (body.model !== ARTGEN_MODEL) {
    throw new DomainError('invalid_request', `\`model\`: the art suite is model '${ARTGEN_MODEL}'; omit \`model\``, { field: 'model', rule: 'enum' });
  }
  const { model: _model, ...rest } = body;
  return rest;
}

async function ownTask(deps: SubmitTaskDeps, principal: AuthPrincipal, id: string): Promise<TaskRecord> {
  const row = /^task_[A-Za-z0-9]{1,64}$/.test(id) ? await deps.tasks.get(id) : null;
  if (!row || row.accountId !== principal.accountId) throw parentNotFound(id);
  return row;
}

/**
 * `POST /v1/artgen/generations/action {task_id, customId, …}`: the customId names the action and its fields;
 * its hash must be the one this task's buttons carry. Other fields (prompt, speed, mask_url…) pass to the action.
 */
async function fromCustomId(
  deps: SubmitTaskDeps,
  principal: AuthPrincipal,
  body: Record<string, unknown>,
): Promise<{ action: ArtgenPathAction; fields: Record<string, unknown>; parent: TaskRecord }> {
  const { customId, ...rest } = body;
  if (typeof body.task_id !== 'string') {
    throw new DomainError('invalid_request', '`task_id` is required: the task whose button was pressed', { field: 'task_id', rule: 'required' });
  }
  if (customId === undefined) {
    throw new DomainError('invalid_request', '`customId` is required: a buttons[].customId of the task', { field: 'customId', rule: 'required' });
  }
  const parsed = parseArtgenCustomId(customId);
  if (!parsed || !isArtgenPathAction(parsed.action)) {
    throw new DomainError('invalid_request', '`customId` is not a button of the art suite (copy it from buttons[].customId of GET /v1/artgen/<task_id>)', {
      field: 'customId',
      rule: 'format',
    });
  }
  const parent = await ownTask(deps, principal, body.task_id);
  if (parsed.hash !== artgenJobHash(parent.id)) {
    throw new DomainError('invalid_request', `\`customId\` belongs to another task than '${parent.id}'`, { field: 'customId', rule: 'server:custom-id-task' });
  }
  const fields: Record<string, unknown> = { ...rest };
  if (parsed.index !== undefined) fields.index = parsed.index;
  if (parsed.direction !== undefined) fields.direction = parsed.direction;
  if (parsed.zoom_ratio !== undefined) fields.zoom_ratio = parsed.zoom_ratio;
  return { action: parsed.action, fields, parent };
}

/** The submission answer of the art suite (our choice where spec 4.9 says "not shown"; the protocol of the suite). */
export function artgenAck(accepted: Pick<ArtgenAccepted, 'taskId' | 'action'>, status = 'SUBMITTED', extra: Record<string, unknown> = {}) {
  return { code: 200, data: { task_id: accepted.taskId, action: artgenNativeAction(accepted.action), status, ...extra } };
}
