import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Router, type Request, type RequestHandler } from 'express';
import { POOLS, QUEUES, type Pool } from '@gmg/contracts';
import { createBillingQueue, createTaskQueueShards, type Redis } from '@gmg/queue';
import type { FailedAuthThrottle } from '../auth/failed-auth.throttle';
import { adminTokenMatcher, checkAdminToken } from '../middleware/admin-token';

/** Where the dashboard is mounted (its UI builds its own links and API calls from it). */
export const QUEUE_DASHBOARD_PATH = '/admin/queues';

export interface QueueDashboardDeps {
  /** ADMIN_TOKEN; an empty token refuses everyone. */
  adminToken: string;
  /** The app's Redis connection (shared: the dashboard's queue handles open no connection of their own). */
  redis: Redis;
  /** BullMQ key prefix (QUEUE_PREFIX). */
  prefix: string;
  /** Queue shards per pool (QUEUE_SHARDS); shard i > 0 is listed as `s<i>.<queue>`. Default 1 each. */
  shards?: Readonly<Partial<Record<Pool, number>>>;
  /** ADMIN_QUEUES_WRITE: allow retry, promote, remove, clean, pause (default false: read-only). */
  allowWrites: boolean;
  /** Wrong admin tokens count against the client address's failed-auth budget (docs/rate-limits.md). */
  throttle?: FailedAuthThrottle;
}

/**
 * The token an operator sent: `Authorization: Bearer <ADMIN_TOKEN>` (scripts, curl), or HTTP Basic with the admin
 * token as the password and any user name (browsers: they cannot add a bearer header to a navigation, but they
 * prompt for Basic credentials on a 401 with `WWW-Authenticate: Basic` and resend them with the page's API calls).
 */
function presentedAdminToken(req: Pick<Request, 'headers'>): string | undefined {
  const header = req.headers.authorization ?? '';
  const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)?.[1];
  if (bearer) return bearer;
  const basic = /^Basic[ \t]+([A-Za-z0-9+/=]+)[ \t]*$/i.exec(header)?.[1];
  if (!basic) return undefined;
  const decoded = Buffer.from(basic, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon >= 0 ? decoded.slice(colon + 1) : undefined;
}

/** Admin-token guard in constant time; a refusal asks browsers for Basic credentials; guesses are throttled. */
function requireAdminToken(adminToken: string, throttle?: FailedAuthThrottle): RequestHandler {
  const matches = adminTokenMatcher(adminToken);
  return async (req, res, next) => {
    if (await checkAdminToken(req, matches, presentedAdminToken(req), throttle)) return next();
    res
      .status(401)
      .set('WWW-Authenticate', 'Basic realm="gmg queue dashboard", charset="UTF-8"')
      .set('Cache-Control', 'no-store')
      .json({
        error: {
          code: 401,
          type: 'authentication_error',
          message: 'Admin token required: Bearer <ADMIN_TOKEN>, or Basic auth with the admin token as the password',
        },
      });
  };
}

/**
 * The BullMQ dashboard (bull-board) over the four pool queues and the billing queue, mounted at
 * {@link QUEUE_DASHBOARD_PATH} behind the admin token. Read-only unless `allowWrites`.
 */
export function createQueueDashboard(deps: QueueDashboardDeps): Router {
  const shards = POOLS.flatMap((pool) => createTaskQueueShards(pool, deps.redis, deps.prefix, deps.shards?.[pool] ?? 1).map((q, i) => ({ q, i })));
  const queues = [...shards, { q: createBillingQueue(deps.redis, deps.prefix), i: 0 }];
  const serverAdapter = new ExpressAdapter().setBasePath(QUEUE_DASHBOARD_PATH);
  createBullBoard({
    queues: queues.map(
      ({ q, i }) =>
        new BullMQAdapter(q, {
          ...(i > 0 ? { prefix: `s${i}.` } : {}),
          readOnlyMode: !deps.allowWrites,
          allowRetries: deps.allowWrites,
          description: q.name === QUEUES.billing ? 'settlements (capture / release)' : 'pool tasks',
        }),
    ),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'gmg queues' } },
  });
  const router = Router();
  router.use(requireAdminToken(deps.adminToken, deps.throttle), serverAdapter.getRouter() as RequestHandler);
  return router;
}
