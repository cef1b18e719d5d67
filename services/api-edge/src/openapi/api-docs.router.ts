import path from 'node:path';
import express, { Router } from 'express';
import { methodNotAllowed } from '../http/error-handler';

export interface ApiDocsDeps {
  /** PUBLIC_BASE_URL: the document's server (Swagger UI's "Try it out" calls it). */
  publicBaseUrl: string;
}

/** swagger-ui-dist's folder: the reference page's assets, served by the edge itself (no CDN; works offline). */
const SWAGGER_UI_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const PAGE_DIR = path.join(__dirname, 'docs-page');
/** Only the files the page loads (the package also holds its own index.html, source maps, package.json). */
const SWAGGER_UI_ASSETS = new Set(['swagger-ui.css', 'swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'favicon-32x32.png', 'favicon-16x16.png']);

/**
 * `GET /openapi.json`: the generated OpenAPI 3.1 document, built on its first request (the YAML files, their parser
 * and the document's code are loaded then, not at start-up: serving never needs them) and kept. `GET /docs`: its
 * rendered reference (Swagger UI from the swagger-ui-dist package, assets under /docs/assets). Public, like the
 * API's contracts.
 */
export function apiDocsRouter(deps: ApiDocsDeps): Router {
  let body: Promise<string> | undefined;
  const document = (): Promise<string> =>
    (body ??= import('./openapi-document')
      .then(({ buildOpenApiDocument }) => JSON.stringify(buildOpenApiDocument({ serverUrl: deps.publicBaseUrl })))
      .catch((err: unknown) => {
        body = undefined; // the next request tries again
        throw err;
      }));
  const router = Router();
  router.get('/openapi.json', async (_req, res) => {
    const json = await document();
    res.type('application/json').set('Cache-Control', 'public, max-age=300').send(json);
  });
  router.get('/docs', (_req, res) => {
    res.set('Cache-Control', 'no-cache').sendFile(path.join(PAGE_DIR, 'index.html'));
  });
  router.use('/docs/page', express.static(PAGE_DIR, { index: false, maxAge: '5m' }));
  const swaggerUi = express.static(SWAGGER_UI_DIR, { index: false, maxAge: '1d' });
  router.use('/docs/assets', (req, res, next) => (SWAGGER_UI_ASSETS.has(req.path.slice(1)) ? swaggerUi(req, res, next) : next()));
  router.all(['/openapi.json', '/docs'], methodNotAllowed(['GET']));
  return router;
}
