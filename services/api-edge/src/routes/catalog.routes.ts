import compression from 'compression';
import { Router, type Request } from 'express';
import { customModelSchemaDocument, isModelAllowed, listCatalog, modelSchemaDocument, resolveModel } from '@gmg/contracts';
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

/** Whether a messages channel lists a custom name by name (the messages route serves it then). */
export type CustomChatLookup = (name: string, group: string) => Promise<boolean>;

/** The custom names (no registry entry) on the key's list that the group allows: callable as submit-task sees it. */
const customNamesOf = (p: AuthPrincipal): string[] => (p.keyModels ?? []).filter((n) => !resolveModel(n) && (!p.groupModels || p.groupModels.includes(n)));

/** The key sees the same models in the list, the schema routes and at submit (spec 4.1 rule 2, 5.3). */
async function schemaFor(principal: AuthPrincipal, name: string, customChat: CustomChatLookup | undefined) {
  const model = resolveModel(name);
  const doc = model
    ? isModelAllowed(model.id, principal.keyModels, principal.groupModels)
      ? modelSchemaDocument(name)
      : undefined
    : customNamesOf(principal).includes(name)
      ? customModelSchemaDocument(name, { chat: (await customChat?.(name, principal.groupName)) ?? false })
      : undefined;
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
export function catalogRouter(deps: { customChat?: CustomChatLookup } = {}): Router {
  const router = Router();
  router.use(['/models', '/model-schema'], compression());

  router.get('/models', async (req, res) => {
    const p = principalOf(res);
    const custom = customNamesOf(p);
    const chat =
      deps.customChat && custom.length > 0
        ? await Promise.all(custom.map(async (n) => ((await deps.customChat!(n, p.groupName)) ? [n] : []))).then((l) => new Set(l.flat()))
        : undefined;
    const data = listCatalog({
      keyModels: p.keyModels,
      groupModels: p.groupModels,
      expand: queryString(req, 'expand'),
      category: queryString(req, 'category'),
      customChatModels: chat,
    });
    res.setHeader('Cache-Control', CACHE_CONTROL);
    res.json(wantsVendorModelList(req.headers) ? vendorModelList(data) : { success: true, object: 'list', data });
  });

  router.get('/models/:model/schema', async (req, res) => {
    const doc = await schemaFor(principalOf(res), req.params.model, deps.customChat);
    res.setHeader('Cache-Control', CACHE_CONTROL);
    res.json(doc);
  });

  router.get('/model-schema', async (req, res) => {
    const name = queryString(req, 'model');
    if (!name) throw new DomainError('invalid_request', '`model` query parameter is required, e.g. /v1/model-schema?model=lumen-2-pro', { field: 'model' });
    const doc = await schemaFor(principalOf(res), name, deps.customChat);
    res.setHeader('Cache-Control', CACHE_CONTROL);
    res.json(doc);
  });

  router.all(['/models', '/models/:model/schema', '/model-schema'], methodNotAllowed(['GET']));
  return router;
}
