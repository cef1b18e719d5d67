import { pipeline } from 'node:stream/promises';
import { Router } from 'express';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';
import type { ResultLinks, ResultStore } from '@gmg/upstream';
import { methodNotAllowed } from '../http/error-handler';

export interface ResultsRouterDeps {
  store: Pick<ResultStore, 'open'>;
  links: Pick<ResultLinks, 'verify'>;
  logger: Logger;
  now?: () => Date;
}

const refused = (): DomainError => new DomainError('permission', 'link expired or invalid');

/**
 * `GET /v1/results/<key>?expires=&signature=`: the files the workers kept for finished tasks (results kept by us,
 * docs/upstreams/results.md). No API key: the signature is the capability, bound to the key and its expiry, so it
 * sits before the /v1 key auth (app.ts). The object streams through with its stored type; the client may cache it
 * for as long as the link has left.
 */
export function createResultsRouter(deps: ResultsRouterDeps): Router {
  const router = Router();
  const now = deps.now ?? (() => new Date());
  router.get('/*key', async (req, res, next) => {
    const key = ([] as string[]).concat(req.params.key as string | string[]).join('/');
    const { expires, signature } = req.query;
    const nowS = Math.floor(now().getTime() / 1000);
    if (typeof expires !== 'string' || typeof signature !== 'string' || !deps.links.verify(key, expires, signature, nowS)) {
      next(refused());
      return;
    }
    const found = await deps.store.open(key);
    if (!found) {
      next(new DomainError('not_found', 'This result does not exist (any more)'));
      return;
    }
    res.setHeader('Content-Type', found.contentType);
    if (found.bytes > 0) res.setHeader('Content-Length', String(found.bytes));
    res.setHeader('Cache-Control', `private, max-age=${Math.max(0, Number(expires) - nowS)}`);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Content-Disposition', 'inline');
    res.status(200);
    if (req.method === 'HEAD') {
      found.body.destroy();
      res.end();
      return;
    }
    // A client that goes away mid-download ends the pipeline (and closes the store's stream): nothing to answer then.
    await pipeline(found.body, res).catch((err: unknown) => deps.logger.debug({ err: (err as Error).message }, 'result download ended early'));
  });
  router.all('/*key', methodNotAllowed(['GET']));
  return router;
}
