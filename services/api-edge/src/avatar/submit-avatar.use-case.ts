import { isModelAllowed, type NormalizedRequest } from '@gmg/contracts';
import { AssetGroupRepository, newAssetGroupId, newAssetId, type AuthPrincipal, type AvatarBatch, type TaskRecord } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import { acceptTask, type SubmitTaskDeps, type TaskOrigin } from '../use-cases/submit-task.use-case';
import { parseAvatarRequest, type AvatarRequest } from './avatar-request';

/** The task model of an avatar batch: what channels list to serve avatar review (not a catalog name: never shown). */
export const AVATAR_MODEL = 'motion-2.0-avatar';
/** Approved assets are rendered by this model; a key allowed to use it may submit assets too. */
export const AVATAR_CONSUMER_MODEL = 'motion-2.0';

export type SubmitAvatarDeps = Pick<
  SubmitTaskDeps,
  'tasks' | 'prices' | 'views' | 'queue' | 'logger' | 'media' | 'publicBaseUrl' | 'taskTimeoutSeconds' | 'newTaskId' | 'now' | 'mediaHosts'
> & {
  groups: Pick<AssetGroupRepository, 'get'>;
};

export interface SubmitAvatarInput {
  principal: AuthPrincipal;
  body: unknown;
  /** The claimed `Idempotency-Key` and request fingerprint (see submitTask). */
  idempotency?: { key: string; fingerprint: string };
  origin?: TaskOrigin;
  /** The checked `callback_url` (docs/webhooks.md). */
  callbackUrl?: string;
}

/** Acknowledgement shape C (spec 2.1). */
export type ShapeC = {
  code: 200;
  data: { id: string; object: 'motion.avatar.asset.task'; status: 'processing'; progress: number; model: string };
};

export const shapeC = (taskId: string): ShapeC => ({
  code: 200,
  // a name the catalog lists (issue 27): the model the assets are for; the same in GET /v1/tasks/<id>
  data: { id: taskId, object: 'motion.avatar.asset.task', status: 'processing', progress: 0, model: AVATAR_CONSUMER_MODEL },
});

/** Price keys per asset type, most specific first (infra/prices.json: `avatar-asset@image`, …). */
export const avatarPriceKeys = (type: string): string[] => [`avatar-asset@${type.toLowerCase()}`, 'avatar-asset'];

/** The batch as the worker and the upstream see it: one asset review task, billed per asset. */
export function avatarTaskRequest(req: AvatarRequest, assetIds: readonly string[], groupId: string): NormalizedRequest {
  const n = req.assets.length;
  return {
    model: AVATAR_MODEL,
    requestedModel: AVATAR_CONSUMER_MODEL,
    pool: 'avatar',
    // Our group id means nothing upstream: the upstream files the assets in a group of its own.
    upstreamBody: { asset_type: req.assetType, project_name: req.projectName, assets: req.assets.map((a) => ({ url: a.url, name: a.name })) },
    derived: { assetIds: [...assetIds], groupId, assetType: req.assetType },
    billing: [{ keys: avatarPriceKeys(req.assetType), quantity: n, label: `${n} ${req.assetType.toLowerCase()} asset${n === 1 ? '' : 's'}` }],
    expected: { kind: 'assets', count: n },
  };
}

function checkAllowed(p: AuthPrincipal): void {
  const allowed = [AVATAR_CONSUMER_MODEL, AVATAR_MODEL].some((m) => isModelAllowed(m, p.keyModels, p.groupModels));
  if (!allowed) throw new DomainError('permission', `This API key is not allowed to use model '${AVATAR_CONSUMER_MODEL}' (avatar assets)`, { field: 'model' });
}

/** The asset rows of the batch, and its group when the submission names none (created with the task). */
function avatarBatch(req: AvatarRequest, assetIds: readonly string[], groupId: string, now: Date): AvatarBatch {
  const auto = !req.group;
  return {
    groupId,
    newGroup:
      req.groupId !== undefined
        ? undefined
        : {
            name: req.group?.name ?? `${req.projectName} ${now.toISOString()}`,
            description: req.group?.description ?? (auto ? 'created automatically for an avatar submission' : ''),
            autoCreated: auto,
          },
    assets: req.assets.map((a, i) => ({
      id: assetIds[i]!,
      position: i,
      assetType: req.assetType,
      name: a.name,
      url: a.url,
      projectName: req.projectName,
    })),
  };
}

/**
 * `POST /v1/motion2/private-avatar`: validate → group (an existing one of this account, or a new one) → the money
 * step every submission shares (acceptTask: quote n × the per-asset price → ONE statement: hold + task row + ledger
 * hold + the new group + the `Pending` asset rows → task view → queue) → shape C, with the task it names. Nothing
 * is written before the request is known to be valid, and a refused hold (402, 429) leaves no group and no asset
 * behind; a reused Idempotency-Key whose Redis record was lost answers with the first task.
 */
export async function submitAvatar(deps: SubmitAvatarDeps, input: SubmitAvatarInput): Promise<{ ack: ShapeC; task: TaskRecord }> {
  const { principal } = input;
  checkAllowed(principal);
  const req = parseAvatarRequest(input.body, { trustedUrlPrefixes: [`${deps.publicBaseUrl}/v1/uploads/`] });
  await deps.mediaHosts?.(req.mediaUrls);
  if (req.groupId !== undefined && !(await deps.groups.get(principal.accountId, req.groupId))) {
    // a group of another account reads exactly like a missing one
    throw new DomainError('invalid_request', `\`group_id\`: asset group '${req.groupId}' not found`, { field: 'group_id', rule: 'server:group-not-found' });
  }
  const groupId = req.groupId ?? newAssetGroupId();
  const assetIds = req.assets.map(() => newAssetId());
  const now = (deps.now ?? (() => new Date()))();
  const task = await acceptTask(deps, principal, avatarTaskRequest(req, assetIds, groupId), input.idempotency, {
    origin: input.origin,
    callbackUrl: input.callbackUrl,
    avatarBatch: avatarBatch(req, assetIds, groupId, now),
  });
  return { ack: shapeC(task.id), task };
}
