import { createHash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from '@gmg/logger';
import { parseMarkers } from '../sim-scenario';
import { sendError } from '../sim-errors';
import { newTaskId, type SimTask, type SimTaskStore } from '../sim-task.store';
import { planAvatarReview } from './avatar-review';
import { isObj } from '../sim-json';

export const SIM_AVATAR_MODEL = 'motion-2.0-avatar';
const ASSET_TYPES = ['Image', 'Video', 'Audio'];
const MAX_ASSETS = 20;

export interface AvatarSubmitDeps {
  store: SimTaskStore;
  timeScale: number;
  now: () => number;
  log: Logger;
}

const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v.trim() !== '';

/** The assets of a body (`assets`, or the `url` + `name` shorthand), or why the body is refused. */
function assetsOf(b: Record<string, unknown>): Array<{ url: string; name: string }> | string {
  if (b.assets !== undefined && (b.url !== undefined || b.name !== undefined)) return '`url`/`name` cannot be sent together with `assets`';
  const list = b.assets === undefined ? [{ url: b.url, name: b.name }] : b.assets;
  if (!Array.isArray(list) || list.length < 1 || list.length > MAX_ASSETS) return `\`assets\` must hold 1 to ${MAX_ASSETS} items`;
  for (const [i, a] of list.entries()) {
    if (!isObj(a) || !nonEmpty(a.url) || !nonEmpty(a.name)) return `\`assets.${i}\` needs a \`url\` and a \`name\``;
    if (!/^https?:\/\//i.test(a.url)) return `\`assets.${i}.url\` must be an http(s) URL`;
  }
  return list as Array<{ url: string; name: string }>;
}

/**
 * `POST /v1/motion2/private-avatar`: shape C; each asset is reviewed on its own schedule, decided by the markers in
 * its `name` (`[sim:moderation]` rejects that asset only; `[sim:fail]` fails the batch; `[sim:slow]`, `[sim:never]`,
 * `[sim:error503]`, `[sim:error503once]` as for prompts).
 */
export function avatarSubmitHandler(deps: AvatarSubmitDeps): RequestHandler {
  return (req: Request, res: Response) => {
    const b: unknown = req.body;
    if (!isObj(b)) return sendError(res, 400, 'invalid_request_error', 'request body must be a JSON object');
    const assets = assetsOf(b);
    if (typeof assets === 'string') return sendError(res, 400, 'invalid_request_error', assets);
    const assetType = b.asset_type ?? 'Image';
    if (typeof assetType !== 'string' || !ASSET_TYPES.includes(assetType)) {
      return sendError(res, 400, 'invalid_request_error', `\`asset_type\` must be one of ${ASSET_TYPES.join(', ')}`);
    }
    const reply = (task: SimTask) =>
      res.json({ code: 200, data: { id: task.id, object: 'motion.avatar.asset.task', status: 'processing', progress: 0, model: task.model } });

    const key = req.header('idempotency-key') || undefined;
    const previous = key ? deps.store.byKey(key) : undefined;
    if (previous) return reply(previous);

    const markers = parseMarkers(assets.map((a) => a.name).join(' '));
    if (markers.submit503) {
      const failKey = key ?? createHash('sha256').update(JSON.stringify(b)).digest('hex');
      if (markers.submit503 === 'always' || deps.store.firstFailure(failKey)) {
        return sendError(res, 503, 'service_unavailable', 'upstream temporarily unavailable (simulated)');
      }
    }
    const plan = planAvatarReview(assets, assetType, deps.timeScale);
    const task: SimTask = {
      id: newTaskId(),
      model: SIM_AVATAR_MODEL,
      ack: 'C',
      expected: { kind: 'assets', count: assets.length },
      outcome: plan.outcome,
      startedAt: deps.now(),
      durationMs: plan.durationMs,
      avatar: plan.assets,
    };
    deps.store.add(task, key);
    deps.log.debug({ taskId: task.id, assets: assets.length, outcome: task.outcome, durationMs: task.durationMs }, 'sim avatar batch submitted');
    reply(task);
  };
}
