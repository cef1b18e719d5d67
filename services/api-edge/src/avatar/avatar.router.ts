import { Router, type RequestHandler } from 'express';
import { AVATAR_ENDPOINT } from '@gmg/contracts';
import type { AssetGroupRepository, AssetRepository } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import { methodNotAllowed } from '../http/error-handler';
import { principalOf } from '../http/principal';
import { underMount } from '../http/request-path';
import { idempotencyOf } from '../middleware/idempotency';
import { callbackUrlOf } from '../webhooks/callback-url';
import { assetView, groupView, page, parseAssetQuery, parsePaging } from './avatar-browse';
import { originOf } from '../observability/submit-metrics';
import { answerNamesTask } from '../middleware/task-answer.shapes';
import { submitAvatar, type SubmitAvatarDeps } from './submit-avatar.use-case';

export const PRIVATE_AVATAR_PATH = AVATAR_ENDPOINT;
export const AVATAR_GROUPS_PATH = '/v1/motion2/groups';
export const AVATAR_ASSETS_PATH = '/v1/motion2/assets';

export interface AvatarRouterDeps extends SubmitAvatarDeps {
  assets: Pick<AssetRepository, 'get' | 'list'>;
  groups: Pick<AssetGroupRepository, 'get' | 'list'>;
}

const notFound = (what: string, id: string) => new DomainError('not_found', `${what} ${id} not found`);

/**
 * Avatar assets (spec 4.8): the batch submission (shape C) and a small read API over the caller's own groups and
 * assets. Mounted at /v1/motion2, after auth; `guards` (rate limit, idempotency, in-flight) run on the submission only.
 */
export function avatarRouter(deps: AvatarRouterDeps, bodyParsers: RequestHandler[], guards: RequestHandler[]): Router {
  const router = Router();
  const [submitPath, groupsPath, assetsPath] = [PRIVATE_AVATAR_PATH, AVATAR_GROUPS_PATH, AVATAR_ASSETS_PATH].map((p) => underMount('/v1/motion2', p));
  router.post(submitPath, ...guards, ...bodyParsers, async (req, res) => {
    const { ack, task } = await submitAvatar(deps, {
      principal: principalOf(res),
      body: req.body,
      idempotency: idempotencyOf(res),
      origin: originOf(req, res),
      callbackUrl: callbackUrlOf(res),
    });
    answerNamesTask(res, 'C', task);
    res.status(200).json(ack);
  });
  router.all(submitPath, methodNotAllowed(['POST']));

  router.get(groupsPath, async (req, res) => {
    const { items, hasMore } = await deps.groups.list(principalOf(res).accountId, parsePaging(req.query));
    res.setHeader('Cache-Control', 'no-store');
    res.json(page(items, hasMore, (g) => g.id, groupView));
  });
  router.all(groupsPath, methodNotAllowed(['GET']));

  router.get(`${groupsPath}/:group_id`, async (req, res) => {
    const g = await deps.groups.get(principalOf(res).accountId, req.params.group_id);
    if (!g) throw notFound('Asset group', req.params.group_id);
    res.setHeader('Cache-Control', 'no-store');
    res.json({ code: 200, data: groupView(g) });
  });
  router.all(`${groupsPath}/:group_id`, methodNotAllowed(['GET']));

  router.get(assetsPath, async (req, res) => {
    const { items, hasMore } = await deps.assets.list(principalOf(res).accountId, parseAssetQuery(req.query));
    res.setHeader('Cache-Control', 'no-store');
    res.json(page(items, hasMore, (a) => a.id, assetView));
  });
  router.all(assetsPath, methodNotAllowed(['GET']));

  router.get(`${assetsPath}/:asset_id`, async (req, res) => {
    const a = await deps.assets.get(principalOf(res).accountId, req.params.asset_id);
    if (!a) throw notFound('Asset', req.params.asset_id);
    res.setHeader('Cache-Control', 'no-store');
    res.json({ code: 200, data: assetView(a) });
  });
  router.all(`${assetsPath}/:asset_id`, methodNotAllowed(['GET']));
  return router;
}
