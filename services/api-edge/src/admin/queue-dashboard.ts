import { Router, type Request, type RequestHandler } from 'express';
import type { FailedAuthThrottle } from '../auth/failed-auth.throttle';
import { adminTokenMatcher, checkAdminToken } from '../middleware/admin-token';
import type { QueueBoardDeps } from './queue-board';

/** Where the dashboard is mounted (its UI builds its own links and API calls from it). */
export const QUEUE_DASHBOARD_PATH = '/admin/queues';

export interface QueueDashboardDeps extends QueueBoardDeps {
  /** ADMIN_TOKEN; an empty token refuses everyone. */
  adminToken: string;
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
 * {@link QUEUE_DASHBOARD_PATH} behind the admin token. Read-only unless `allowWrites`. bull-board (its UI, its
 * templates, the queue handles) is loaded on the first request that passes the token, not at start-up.
 */
export function createQueueDashboard(deps: QueueDashboardDeps): Router {
  let board: Promise<RequestHandler> | undefined;
  const loadBoard = (): Promise<RequestHandler> =>
    (board ??= import('./queue-board')
      .then(({ createQueueBoard }) => createQueueBoard(deps, QUEUE_DASHBOARD_PATH))
      .catch((err: unknown) => {
        board = undefined; // the next request tries again
        throw err;
      }));
  const router = Router();
  router.use(requireAdminToken(deps.adminToken, deps.throttle), async (req, res, next) => (await loadBoard())(req, res, next));
  return router;
}
