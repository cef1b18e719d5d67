import { readFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { ARTGEN_CONTRACTS, TASK_FAILURE_TYPES, listModelNames, modelSchemaDocument, type ErrorType } from '@gmg/contracts';
import { ERROR_CODES, type ErrorCode } from '@gmg/errors';
import { ARTGEN_TYPES } from '../http/error-body';
import { HTTP_STATUS_OF } from '../http/error-map';

/** An OpenAPI (sub)document: plain JSON. */
type Obj = Record<string, unknown>;

const SRC = path.join(__dirname, '..');

/**
 * The route table of the document: each router factory `createApp` mounts → the file (under services/api-edge/src,
 * next to the router) holding the OpenAPI path items it serves. Documenting a new route = adding its path item to
 * its router's file (a new router: a new file and one line here). openapi-routes.int.test.ts fails while a documented
 * route is not served, or another method of a documented path is.
 */
const ROUTE_DOCS: Readonly<Record<string, string>> = Object.freeze({
  healthRouter: 'routes/health.openapi.yaml',
  apiDocsRouter: 'openapi/api-docs.openapi.yaml',
  createManagementRouter: 'management/management.openapi.yaml',
  createUploadsRouter: 'uploads/uploads.openapi.yaml',
  createResultsRouter: 'results/results.openapi.yaml',
  createUpstreamCallbacksRouter: 'upstream-callbacks/upstream-callbacks.openapi.yaml',
  generationsRouter: 'routes/generations.openapi.yaml',
  messagesRouter: 'messages/messages.openapi.yaml',
  avatarRouter: 'avatar/avatar.openapi.yaml',
  tasksRouter: 'routes/tasks.openapi.yaml',
  catalogRouter: 'routes/catalog.openapi.yaml',
  artgenRouter: 'artgen/artgen.openapi.yaml',
  cancelRouter: 'cancel/cancel.openapi.yaml',
});

/**
 * What createApp mounts without a router factory: the queue dashboard's page (bull-board: its own UI and internal
 * API), the edge's /metrics and the playground page.
 */
const MOUNTED_APP_DOCS = ['admin/queue-dashboard.openapi.yaml', 'openapi/app-endpoints.openapi.yaml'];

/** The hand-written rest: info, tags, security schemes and the response/parameter/schema components. */
const COMPONENTS_FILE = 'openapi/components.openapi.yaml';

const readYaml = (rel: string): Obj => YAML.parse(readFileSync(path.join(SRC, rel), 'utf8')) as Obj;

/** `o[k1][k2]…` of the hand-written components, an object: a part missing is a broken components file. */
function at(o: Obj, ...keys: string[]): Obj {
  let cur: unknown = o;
  for (const k of keys) {
    cur = (cur as Obj)[k];
    if (typeof cur !== 'object' || cur === null) throw new Error(`${COMPONENTS_FILE}: no object at ${keys.join('.')}`);
  }
  return cur as Obj;
}

/** Model id → a component name OpenAPI accepts (`^[a-zA-Z0-9._-]+$`). */
const componentName = (prefix: string, id: string): string => `${prefix}.${id.replace(/[^A-Za-z0-9._-]/g, '_')}`;

/** A published JSON Schema as a component: the document declares the dialect, so `$schema` is dropped. */
function asComponent(schema: Obj): Obj {
  const { $schema: _dialect, $id: _id, ...rest } = schema;
  return rest;
}

/**
 * One component per distinct request schema of the models an endpoint serves (interchangeable aliases share one),
 * from the model registry (`modelSchemaDocument(name).parameters.input_schema`, the schema the API itself publishes).
 */
function modelRequestSchemas(endpoint: string): Array<{ name: string; models: string[]; schema: Obj }> {
  const byText = new Map<string, { name: string; models: string[]; schema: Obj }>();
  for (const model of listModelNames()) {
    const params = modelSchemaDocument(model)?.parameters as Obj | undefined;
    if (params?.endpoint !== endpoint || !params.input_schema) continue;
    const schema = asComponent(params.input_schema as Obj);
    const text = JSON.stringify(schema);
    const seen = byText.get(text);
    if (seen) seen.models.push(model);
    else byText.set(text, { name: componentName('Model', model), models: [model], schema });
  }
  return [...byText.values()];
}

/** The error types the code produces (ERROR_CODES and the art dialect), each with its HTTP statuses and codes. */
function errorTypeTable(): Array<{ type: string; statuses: number[]; codes: string[] }> {
  const rows = new Map<string, { type: string; statuses: Set<number>; codes: string[] }>();
  const add = (type: string, status: number, code: string) => {
    const row = rows.get(type) ?? { type, statuses: new Set<number>(), codes: [] };
    row.statuses.add(status);
    row.codes.push(code);
    rows.set(type, row);
  };
  for (const [code, type] of Object.entries(ERROR_CODES)) {
    const status = HTTP_STATUS_OF[code as ErrorCode];
    add(type, status, code);
    const art = ARTGEN_TYPES[type as ErrorType];
    if (art) add(art, status, `${code} (art suite)`);
  }
  return [...rows.values()].map((r) => ({ type: r.type, statuses: [...r.statuses].sort(), codes: r.codes }));
}

function withGeneratedParts(doc: Obj): void {
  const c = at(doc, 'components');
  const schemas = at(c, 'schemas');

  // every image and video model's request body
  for (const [body, endpoint] of [
    ['ImageGeneration', '/v1/images/generations'],
    ['VideoGeneration', '/v1/videos/generations'],
  ] as const) {
    const bodies = modelRequestSchemas(endpoint);
    if (bodies.length === 0) throw new Error(`no model serves ${endpoint}`);
    for (const s of bodies) schemas[s.name] = { ...s.schema, description: `Request body of ${s.models.join(', ')} (from the model registry).` };
    at(c, 'requestBodies', body, 'content', 'application/json').schema = { oneOf: bodies.map((s) => ({ $ref: `#/components/schemas/${s.name}` })) };
  }

  // every art suite action's request body; `action` (run a button) keeps the generic body
  const actions = Object.keys(ARTGEN_CONTRACTS);
  for (const [action, contract] of Object.entries(ARTGEN_CONTRACTS)) {
    schemas[componentName('ArtAction', action)] = {
      ...asComponent(contract.inputSchema as Obj),
      title: `artgen ${action} request body`,
      description: `Body of the \`${action}\` action (from its contract).`,
    };
  }
  at(c, 'requestBodies', 'ArtAction', 'content', 'application/json').schema = {
    anyOf: [...actions.map((a) => ({ $ref: `#/components/schemas/${componentName('ArtAction', a)}` })), { $ref: '#/components/schemas/ArtRequest' }],
  };
  at(c, 'parameters', 'ArtAction').schema = { type: 'string', enum: [...actions, 'action'] };

  // every error type, with where it comes from
  const table = errorTypeTable();
  schemas.ErrorType = {
    type: 'string',
    enum: table.map((r) => r.type),
    description: [
      'The error types the gateway produces (spec section 7); `not_found` and `internal_error` belong to the art suite dialect.',
      '',
      '| type | HTTP status | internal codes |',
      '|---|---|---|',
      ...table.map((r) => `| \`${r.type}\` | ${r.statuses.join(', ')} | ${r.codes.map((x) => `\`${x}\``).join(', ')} |`),
    ].join('\n'),
  };
  at(schemas, 'TaskError', 'properties').type = { type: 'string', description: 'Why the task failed, when known.', enum: Object.values(TASK_FAILURE_TYPES) };
}

/** Merges path items, refusing a method documented twice. */
function mergePaths(files: string[]): Obj {
  const paths: Obj = {};
  for (const file of files) {
    for (const [p, item] of Object.entries((readYaml(file).paths ?? {}) as Obj)) {
      const before = paths[p] as Obj | undefined;
      for (const method of Object.keys(item as Obj)) {
        if (before?.[method]) throw new Error(`${method.toUpperCase()} ${p} is documented twice (${file})`);
      }
      paths[p] = { ...before, ...(item as Obj) };
    }
  }
  return paths;
}

/**
 * The OpenAPI 3.1 document of api-edge, generated: paths from the route table ({@link ROUTE_DOCS}), request bodies
 * of every model and art action from the model registry, error types from the error map; the rest from
 * components.openapi.yaml. `serverUrl` (PUBLIC_BASE_URL) becomes its only server.
 */
export function buildOpenApiDocument(opts: { serverUrl?: string } = {}): Obj {
  const doc = readYaml(COMPONENTS_FILE);
  withGeneratedParts(doc);
  if (opts.serverUrl) doc.servers = [{ url: opts.serverUrl, description: 'this gateway' }];
  const paths = mergePaths([...Object.values(ROUTE_DOCS), ...MOUNTED_APP_DOCS]);
  const { components, ...head } = doc;
  return { ...head, paths, components };
}
