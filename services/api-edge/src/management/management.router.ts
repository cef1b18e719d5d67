import { randomUUID } from 'node:crypto';
import express, { Router, type ErrorRequestHandler, type Request, type RequestHandler, type Response } from 'express';
import type { DataSource } from 'typeorm';
import { TaskRepository, type AuthPrincipal } from '@gmg/db';
import { DomainError, isDomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';
import type { TrialDeps } from '@gmg/upstream';
import { httpStatusOf } from '../http/error-map';
import { assertJsonDepth } from '../http/json-depth';
import type { FailedAuthThrottle } from '../auth/failed-auth.throttle';
import { bearerOf as bearer, requireAdminToken } from '../middleware/admin-token';
import { ChannelKeysService } from './channel-keys.service';
import { ConsoleService } from './console.service';
import { ManagementService } from './management.service';
import { lookupTasks } from './task-lookup';
import { UsageService, usageCsv, type UsageReport } from './usage.service';
import { WebhooksService } from './webhooks.service';

export interface ManagementRouterDeps {
  ds: DataSource;
  /** ADMIN_TOKEN; an empty token disables every admin route (401). */
  adminToken: string;
  /**
   * API key → principal (the app's cached authenticator behind the failed-authentication throttle, which may throw
   * 429), for the key-authenticated routes; `clientAddress` gives Express `req.ip` when asked.
   */
  authenticate: (secret: string, clientAddress: () => string) => Promise<AuthPrincipal | null>;
  /** The channel test's calls (POST /api/channels/{id}/test); absent: that route answers 503. */
  trial?: TrialDeps;
  /** Called after a key was revoked or rotated (e.g. to clear this replica's key cache at once). */
  onKeyRevoked?: (keyId: string) => void;
  logger: Pick<Logger, 'error' | 'warn' | 'info'>;
  /** Largest accepted JSON body. Default 1 MiB (price tables). */
  maxBodyBytes?: number;
  /** Rows one page of a console list may read (default LIST_SCAN_BUDGET, 5,000; tests lower it). */
  listScanBudget?: number;
  /** Wrong admin tokens count against the client address's failed-auth budget, like wrong API keys. */
  authThrottle?: FailedAuthThrottle;
}

/** The management API's envelope (spec 4.4). Errors use it too, with an honest status. */
export interface Envelope<T> {
  success: boolean;
  message: string;
  data: T | null;
}

const PRINCIPAL = 'managementPrincipal';

const send = <T>(res: Response, status: number, data: T, message = 'ok'): void => {
  res.status(status).json({ success: true, message, data } satisfies Envelope<T>);
};

/**
 * The management API, mounted at `/api`: admin routes (Bearer ADMIN_TOKEN) for accounts, keys, channels, prices
 * and groups; key routes (Bearer API key) for the caller's balance and logs. Every answer, errors included,
 * is `{success, message, data}` with an honest HTTP status; the router has its own 404 and error handler so
 * nothing under /api falls through to the public error shape.
 */
export function createManagementRouter(deps: ManagementRouterDeps): Router {
  const svc = new ManagementService(deps.ds);
  const webhooks = new WebhooksService(deps.ds);
  const channelKeys = new ChannelKeysService(deps.ds, deps.trial);
  const usage = new UsageService(deps.ds);
  const router = Router();
  const admin = requireAdminToken(deps.adminToken, deps.authThrottle);
  const key: RequestHandler = async (req, res, next) => {
    const secret = bearer(req);
    if (!secret) throw new DomainError('authentication', 'Missing API key: send `Authorization: Bearer <API_KEY>`');
    const principal = await deps.authenticate(secret, () => req.ip ?? '');
    if (!principal) throw new DomainError('authentication', 'Invalid API key');
    res.locals[PRINCIPAL] = principal;
    next();
  };
  const principal = (res: Response): AuthPrincipal => res.locals[PRINCIPAL] as AuthPrincipal;
  const id = (req: Request): string => String(req.params.id);

  router.use(express.json({ limit: deps.maxBodyBytes ?? 1024 * 1024, verify: (_req, _res, buf) => assertJsonDepth(buf) }));

  const consoleReads = new ConsoleService(deps.ds, deps.listScanBudget);
  router.get('/accounts', admin, async (req, res) => send(res, 200, await consoleReads.accounts(req.query)));
  router.post('/accounts', admin, async (req, res) => send(res, 201, await svc.createAccount(req.body), 'account created'));
  router.get('/accounts/:id', admin, async (req, res) => send(res, 200, await svc.getAccount(id(req))));
  router.post('/accounts/:id/topups', admin, async (req, res) => {
    const { account, replayed } = await svc.topup(id(req), req.body, req.get('Idempotency-Key'));
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    send(res, replayed ? 200 : 201, account, replayed ? 'already topped up under this Idempotency-Key' : 'topped up');
  });

  router.post('/keys', admin, async (req, res) => send(res, 201, await svc.createKey(req.body), 'key created; the secret is shown only now'));
  router.get('/keys', admin, async (req, res) => send(res, 200, await svc.listKeys(req.query)));
  router.get('/keys/:id', admin, async (req, res) => send(res, 200, await svc.getKey(id(req))));
  router.patch('/keys/:id', admin, async (req, res) => {
    const k = await svc.updateKey(id(req), req.body);
    deps.onKeyRevoked?.(k.id);
    send(res, 200, k, 'key updated');
  });
  router.delete('/keys/:id', admin, async (req, res) => {
    const { key: k, changed } = await svc.revokeKey(id(req));
    if (changed) deps.onKeyRevoked?.(k.id);
    send(res, 200, k, changed ? 'key revoked' : 'key was already revoked');
  });
  router.post('/keys/:id/rotate', admin, async (req, res) => {
    const k = await svc.rotateKey(id(req), req.body);
    deps.onKeyRevoked?.(k.id);
    res.setHeader('Cache-Control', 'no-store');
    send(res, 200, k, 'key rotated; the new secret is shown only now, the old one works until previous_secret_valid_until');
  });

  router.get('/channels', admin, async (_req, res) => send(res, 200, await svc.listChannels()));
  router.post('/channels', admin, async (req, res) => send(res, 201, await svc.createChannel(req.body), 'channel created'));
  router.patch('/channels/:id', admin, async (req, res) => send(res, 200, await svc.updateChannel(id(req), req.body), 'channel updated'));
  // one key at a time (the channel's other keys untouched); answers show key ids, hints and health, never secrets
  const keyId = (req: Request): string => String(req.params.keyId);
  router.get('/channels/:id/keys', admin, async (req, res) => send(res, 200, await channelKeys.list(id(req))));
  router.post('/channels/:id/keys', admin, async (req, res) => send(res, 201, await channelKeys.add(id(req), req.body), 'keys added'));
  router.patch('/channels/:id/keys/:keyId', admin, async (req, res) => send(res, 200, await channelKeys.update(id(req), keyId(req), req.body), 'key updated'));
  router.post('/channels/:id/test', admin, async (req, res) => send(res, 200, await channelKeys.test(id(req), req.body), 'channel tested'));
  router.delete('/channels/:id/keys/:keyId', admin, async (req, res) => {
    await channelKeys.remove(id(req), keyId(req));
    send(res, 200, null, 'key removed');
  });

  router.get('/prices', admin, async (_req, res) => send(res, 200, await svc.listPrices()));
  router.put('/prices', admin, async (req, res) => send(res, 200, await svc.putPrices(req.body), 'prices saved'));

  // Support: the tasks of a request id (X-Request-Id) or a trace id (X-Trace-Id) — an array, as it always was; without
  // either, the console's filtered list (a page: docs/management-api.md, "Console routes").
  const tasks = new TaskRepository(deps.ds);
  router.get('/tasks', admin, async (req, res) => {
    const support = 'request_id' in req.query || 'trace_id' in req.query;
    send(res, 200, support ? await lookupTasks(tasks, req.query) : await consoleReads.list(req.query));
  });
  router.get('/tasks/:id', admin, async (req, res) => send(res, 200, await consoleReads.detail(id(req))));
  router.get('/groups', admin, async (_req, res) => send(res, 200, await svc.listGroups()));
  router.put('/groups', admin, async (req, res) => send(res, 200, await svc.putGroups(req.body), 'groups saved'));

  // Usage (docs/management-api.md, "Usage"): JSON in the envelope, or CSV (format=csv, or Accept: text/csv)
  const sendUsage = (req: Request, res: Response, r: { report: UsageReport; format?: 'json' | 'csv' }): void => {
    const csv = r.format ? r.format === 'csv' : req.accepts(['application/json', 'text/csv']) === 'text/csv';
    if (!csv) return send(res, 200, r.report);
    res.setHeader('Content-Type', 'text/csv; charset=utf-8');
    res.setHeader('Content-Disposition', `attachment; filename="usage-${r.report.from}-${r.report.to}.csv"`);
    res.status(200).send(usageCsv(r.report));
  };
  router.get('/usage', admin, async (req, res) => sendUsage(req, res, await usage.report(req.query)));
  router.get('/usage/self', key, async (req, res) => {
    const p = principal(res);
    sendUsage(req, res, await usage.report(req.query, { accountId: p.accountId, keyId: p.keyId }));
  });

  router.get('/balance', key, async (_req, res) => send(res, 200, await svc.balance(principal(res).accountId)));
  router.get('/logs', key, async (req, res) => send(res, 200, await svc.logs(principal(res).accountId, req.query)));

  // Webhooks (docs/webhooks.md): the signing secret (read creates it; rotate replaces it) and the delivery log.
  router.get('/webhooks/secret', key, async (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    send(res, 200, await webhooks.secret(principal(res).accountId));
  });
  router.post('/webhooks/secret/rotate', key, async (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    send(res, 200, await webhooks.rotate(principal(res).accountId), 'secret rotated; deliveries from now on are signed with it');
  });
  router.get('/webhooks/deliveries', key, async (req, res) => send(res, 200, await webhooks.deliveries(principal(res).accountId, req.query)));

  router.use((req) => {
    throw new DomainError('route_not_found', `No management route for ${req.method} ${req.baseUrl}${req.path}`);
  });
  router.use(managementErrorHandler(deps.logger));
  return router;
}

interface BodyParserError extends Error {
  type?: string;
  status?: number;
}

function managementErrorHandler(logger: Pick<Logger, 'error'>): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    if (res.headersSent) return next(err);
    const fail = (status: number, message: string) => res.status(status).json({ success: false, message, data: null } satisfies Envelope<null>);
    if (isDomainError(err)) {
      const { retryAfter } = err.details;
      if (typeof retryAfter === 'number') res.setHeader('Retry-After', String(Math.max(1, Math.ceil(retryAfter))));
      return fail(httpStatusOf(err.code), err.message);
    }
    const bp = err as BodyParserError;
    if (bp?.type === 'entity.parse.failed') return fail(400, 'Request body is not valid JSON');
    if (bp?.type === 'entity.too.large') return fail(413, 'Request body is too large');
    if (typeof bp?.status === 'number' && bp.status >= 400 && bp.status < 500) return fail(bp.status, bp.message);
    const errorId = `err_${randomUUID()}`;
    logger.error({ errorId, method: req.method, path: req.originalUrl.split('?')[0], err }, 'management API: unexpected error');
    return fail(500, `Internal server error (error id ${errorId})`);
  };
}
