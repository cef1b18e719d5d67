import compression from 'compression';
import { Router, type Request } from 'express';
import { isModelAllowed, listCatalog, modelSchemaDocument, resolveModel } from '@gmg/contracts';
import type { AuthPrincipal } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import { methodNotAllowed } from '../http/error-handler';
import { vendorModelList, wantsVendorModelList } from '../messages/messages-models';
import { principalOf } from '../http/principal';

/** The first value of a query parameter (a repeated parameter counts once), or undefined. */
function queryString(req: Request, name: string): string | undefined {
  const v = req.query[name];
  const first = Array.isArray(v) ? v[0] : v;
  return typeof first === 'string' ? first : undefined;
}

/** The key sees the same models in the list, the schema routes and at submit (spec 4.1 rule 2, 5.3). */
function schemaFor(principal: AuthPrincipal, name: string) {
  const model = resolveModel(name);
  const doc = model && isModelAllowed(model.id, principal.keyModels, principal.groupModels) ? modelSchemaDocument(name) : undefined;
  if (!doc) throw new DomainError('not_found', `Model '${name}' not found; GET /v1/models lists the models this key can use`, { field: 'model' });
  return doc;
}

// The catalog depends on the key; clients and proxies may keep it briefly (spec 4.1 rule 5: minutes of freshness).
const CACHE_CONTROL = 'private, max-age=60';

/**
 * `GET /v1/models` (list envelope, `expand` and `category` of spec 4.1), `GET /v1/models/{model}/schema` and
 * `GET /v1/model-schema?model=` (for names with `/`). gzip when the client accepts it: a full expand=parameters
 * list is hundreds of KB. Mounted at /v1.
 */
export function catalogRouter(): Router {
  const router = Router();
  router.use(['/models', '/model-schema'], compression());

  router.get('/models', (req, res) => {
    const p = principalOf(res);
    const data = listCatalog({
      keyModels: p.keyModels,
      groupModels: p.groupModels,
      expand: queryString(req, 'expand'),
      category: queryString(req, 'category'),
    });
    res.setHeader('Cache-Control', CACHE_CONTROL);
    res.json(wantsVendorModelList(req.headers) ? vendorModelList(data) : { success: true, object: 'list', data });
  });

  router.get('/models/:model/schema', (req, res) => {
    res.setHeader('Cache-Control', CACHE_CONTROL);
    res.json(schemaFor(principalOf(res), req.params.model));
  });

  router.get('/model-schema', (req, res) => {
    const name = queryString(req, 'model');
    if (!name) throw new DomainError('invalid_request', '`model` query parameter is required, e.g. /v1/model-schema?model=lumen-2-pro', { field: 'model' });
    res.setHeader('Cache-Control', CACHE_CONTROL);
    res.json(schemaFor(principalOf(res), name));
  });

  router.all(['/models', '/models/:model/schema', '/model-schema'], methodNotAllowed(['GET']));
  return router;
}
