import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import express, { type RequestHandler } from 'express';
import request from 'supertest';
import type { DataSource } from 'typeorm';
import {
  ARTGEN_CONTRACTS,
  CATALOG_CATEGORIES,
  CATALOG_EXPANDS,
  customModelSchemaDocument,
  listCatalog,
  listModelNames,
  listModels,
  modelSchemaDocument,
  resolveModel,
  toMinor,
  TASK_FAILURE_TYPES,
  type PriceTable,
  type TaskResult,
} from '@gmg/contracts';
import { toUnifiedTask, type NewTask, type TaskRecord } from '@gmg/db';
import { testPrincipal } from '@gmg/testing';
import { ERROR_CODES } from '@gmg/errors';
import { apiDocsRouter } from '../../services/api-edge/src/openapi/api-docs.router';
import { buildOpenApiDocument } from '../../services/api-edge/src/openapi/openapi-document';
import { createLogger } from '@gmg/logger';
import { toArtgenNativeTask } from '@gmg/tasks';
import type { KeyAuthenticator } from '../../services/api-edge/src/auth/key-authenticator';
import { errorBody } from '../../services/api-edge/src/http/error-body';
import { errorHandler, routeNotFound } from '../../services/api-edge/src/http/error-handler';
import { HTTP_STATUS_OF } from '../../services/api-edge/src/http/error-map';
import { jsonBody } from '../../services/api-edge/src/http/json-body';
import { setPrincipal } from '../../services/api-edge/src/http/principal';
import { createManagementRouter } from '../../services/api-edge/src/management/management.router';
import {
  createAccountSchema,
  createChannelSchema,
  createKeySchema,
  rotateKeySchema,
  putGroupsSchema,
  putPricesSchema,
  topupSchema,
  updateChannelSchema,
  addChannelKeysSchema,
  updateChannelKeySchema,
  updateKeySchema,
  testChannelSchema,
} from '../../services/api-edge/src/management/management.schemas';
import { accountView, channelView, keyView } from '../../services/api-edge/src/management/management.service';
import { usageGroupView } from '../../services/api-edge/src/management/usage.service';
import { authMiddleware } from '../../services/api-edge/src/middleware/auth.middleware';
import { parseAvatarRequest } from '../../services/api-edge/src/avatar/avatar-request';
import { assetView, groupView, page } from '../../services/api-edge/src/avatar/avatar-browse';
import { shapeC } from '../../services/api-edge/src/avatar/submit-avatar.use-case';
import { artgenRouter } from '../../services/api-edge/src/artgen/artgen.routes';
import { generationsRouter } from '../../services/api-edge/src/routes/generations.routes';
import { DEFAULT_SIDE_LIMITS, uploadImage } from '../../services/api-edge/src/uploads/upload-image.use-case';
import type { UploadStorage } from '../../services/api-edge/src/uploads/upload-storage';
import { createUploadsRouter } from '../../services/api-edge/src/uploads/uploads.router';
import { renderImage } from '../../services/api-edge/src/uploads/test-images.test-kit';
import type { SubmitTaskDeps } from '../../services/api-edge/src/use-cases/submit-task.use-case';

/** The parsed document is untyped JSON; the checks below are what make it trustworthy. */
type Obj = Record<string, any>;

const ROOT = join(__dirname, '..', '..');
const PUBLIC_BASE_URL = 'http://127.0.0.1:8080';
/** The document /openapi.json serves, generated exactly as the edge generates it. */
const DOC: Obj = buildOpenApiDocument({ serverUrl: PUBLIC_BASE_URL });
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

// ---------------------------------------------------------------- stubs: nothing here touches a database or Redis
const silent = createLogger({
  service: 'openapi-test',
  destination: new Writable({
    write(_c, _e, cb) {
      cb();
    },
  }),
});
const ADMIN_TOKEN = 'admin-token-for-the-openapi-test';
const API_KEY = 'sk-openapi-test-key';
const principal = testPrincipal({ keyId: '00000000-0000-4000-8000-000000000001', accountId: '00000000-0000-4000-8000-000000000002' });
const noDb = {
  query: async () => {
    throw new Error('no database in a unit test');
  },
} as unknown as DataSource;
const PRICES: PriceTable = new Map(
  (JSON.parse(readFileSync(join(ROOT, 'infra', 'prices.json'), 'utf8')) as Array<{ key: string; price: number }>).map((p) => [p.key, toMinor(p.price)]),
);
const keys = { authenticate: async (s: string) => (s === API_KEY ? principal : null) } as unknown as KeyAuthenticator;
const noStorage: UploadStorage = { put: async () => undefined, get: async () => undefined, delete: async () => undefined, sweepExpired: async () => 0 };

function taskRecord(t: NewTask, over: Partial<TaskRecord> = {}): TaskRecord {
  const at = new Date('2025-11-22T00:00:00Z');
  return {
    ...t,
    status: 'pending',
    progress: 0,
    channelId: null,
    upstreamTaskId: null,
    result: null,
    error: null,
    createdAt: at,
    startedAt: null,
    completedAt: null,
    updatedAt: at,
    ...over,
  };
}

function submitDeps(): SubmitTaskDeps {
  let n = 0;
  return {
    tasks: { createWithHold: async (t) => taskRecord(t), get: async () => null },
    assets: { usable: async () => new Map() },
    prices: { get: async () => PRICES },
    views: { write: async () => undefined },
    media: { storage: noStorage, publicBaseUrl: PUBLIC_BASE_URL, limits: { maxBytes: 10 * 1024 * 1024, ttlSeconds: 3600, minSide: 16, maxSide: 16384 } },
    queue: { enqueueTask: async () => undefined },
    logger: silent,
    publicBaseUrl: PUBLIC_BASE_URL,
    taskTimeoutSeconds: 1800,
    newTaskId: () => `task_openapi${++n}`,
  };
}

/** The routers the tests below drive through supertest, built with stub dependencies. */
const FACTORIES = {
  apiDocsRouter: () => apiDocsRouter({ publicBaseUrl: PUBLIC_BASE_URL }),
  createManagementRouter: () => createManagementRouter({ ds: noDb, adminToken: ADMIN_TOKEN, authenticate: (s) => keys.authenticate(s), logger: silent }),
  createUploadsRouter: () =>
    createUploadsRouter({
      storage: noStorage,
      publicBaseUrl: PUBLIC_BASE_URL,
      limits: { maxBytes: 1024 * 1024, ttlSeconds: 86400, ...DEFAULT_SIDE_LIMITS },
      authenticate: authMiddleware(keys),
      logger: silent,
    }),
  generationsRouter: () => generationsRouter(submitDeps(), jsonBody(1024 * 1024), []),
  artgenRouter: () =>
    artgenRouter({ ...submitDeps(), views: { write: async () => undefined, read: async () => null }, describeWaitMs: 0 }, jsonBody(1024 * 1024), []),
};

// ---------------------------------------------------------------- document helpers
function pointer(ref: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`only local refs are used: ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((node, key) => (node !== null && typeof node === 'object' ? (node as Obj)[key] : undefined), DOC);
}
const deref = (node: Obj): Obj => (typeof node?.$ref === 'string' ? deref(pointer(node.$ref) as Obj) : node);

function allRefs(node: unknown, at = '#', out: Array<{ at: string; ref: string }> = []): Array<{ at: string; ref: string }> {
  if (Array.isArray(node)) node.forEach((v, i) => allRefs(v, `${at}/${i}`, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push({ at, ref: v });
      else allRefs(v, `${at}/${k}`, out);
    }
  }
  return out;
}

interface Operation {
  method: string;
  path: string;
  op: Obj;
  pathItem: Obj;
}
const OPERATIONS: Operation[] = Object.entries(DOC.paths as Obj).flatMap(([path, pathItem]) =>
  HTTP_METHODS.filter((m) => (pathItem as Obj)[m]).map((m) => ({ method: m.toUpperCase(), path, op: (pathItem as Obj)[m] as Obj, pathItem: pathItem as Obj })),
);
const operation = (method: string, path: string): Obj => OPERATIONS.find((o) => o.method === method && o.path === path)!.op;
const securityOf = (o: Operation): string[] => ((o.op.security ?? DOC.security) as Obj[]).flatMap((s) => Object.keys(s));

// Ajv over the document itself: refs are made absolute so any sub-schema compiles on its own.
const DOC_ID = 'https://gmg.local/openapi.json';
const absolute = (node: unknown): unknown =>
  Array.isArray(node)
    ? node.map(absolute)
    : node && typeof node === 'object'
      ? Object.fromEntries(Object.entries(node).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' ? `${DOC_ID}${v}` : absolute(v)]))
      : node;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(absolute(DOC) as Obj, DOC_ID);
const compiled = new Map<unknown, ValidateFunction>();
const validatorFor = (schema: Obj): ValidateFunction => {
  if (!compiled.has(schema)) compiled.set(schema, ajv.compile(absolute(schema) as Obj));
  return compiled.get(schema)!;
};
const component = (name: string): Obj => DOC.components.schemas[name] as Obj;

function expectValid(schema: Obj, value: unknown, what: string): void {
  const v = validatorFor(schema);
  if (!v(value)) throw new Error(`${what} does not match the documented schema: ${ajv.errorsText(v.errors)}\n${JSON.stringify(value).slice(0, 800)}`);
}

/** Property names a schema documents (its own and those of its allOf members, refs followed). */
function documentedKeys(schema: Obj): Set<string> {
  const s = deref(schema);
  return new Set([...Object.keys(s.properties ?? {}), ...((s.allOf ?? []) as Obj[]).flatMap((p) => [...documentedKeys(p)])]);
}
function expectNoUndocumentedKeys(schema: Obj, value: object, what: string): void {
  const known = documentedKeys(schema);
  expect({ what, extra: Object.keys(value).filter((k) => !known.has(k)) }).toEqual({ what, extra: [] });
}

/** Every JSON media type object of the document with where it is. */
function jsonMediaTypes(): Array<{ at: string; media: Obj }> {
  const out: Array<{ at: string; media: Obj }> = [];
  const fromContent = (at: string, holder: Obj | undefined) => {
    for (const [type, media] of Object.entries((holder?.content ?? {}) as Obj)) if (/json/.test(type)) out.push({ at: `${at} ${type}`, media: media as Obj });
  };
  for (const o of OPERATIONS) {
    if (o.op.requestBody && !o.op.requestBody.$ref) fromContent(`${o.method} ${o.path} request`, o.op.requestBody);
    for (const [status, r] of Object.entries(o.op.responses as Obj)) if (!(r as Obj).$ref) fromContent(`${o.method} ${o.path} ${status}`, r as Obj);
  }
  for (const [name, r] of Object.entries(DOC.components.responses as Obj)) fromContent(`responses/${name}`, r as Obj);
  for (const [name, r] of Object.entries(DOC.components.requestBodies as Obj)) fromContent(`requestBodies/${name}`, r as Obj);
  return out;
}
const examplesOf = (media: Obj): Array<{ name: string; value: unknown }> => [
  ...('example' in media ? [{ name: 'example', value: media.example }] : []),
  ...Object.entries((media.examples ?? {}) as Obj).map(([name, e]) => ({ name, value: (e as Obj).value })),
];

// ---------------------------------------------------------------- the tests
/** Runs the OpenAPI validator's CLI (@seriousme/openapi-schema-validator: the official OAS 3.1 JSON schema and
 * every $ref resolved) on a document; the package is ESM-only, so it runs in its own node process. */
function validateOpenApi(doc: Obj): { valid: boolean; errors?: unknown } {
  const dir = mkdtempSync(join(tmpdir(), 'gmg-openapi-'));
  try {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    const cli = require.resolve('@seriousme/openapi-schema-validator/bin/validate-api-cli.js');
    let out: string;
    try {
      out = execFileSync(process.execPath, [cli, file], { encoding: 'utf8', timeout: 60_000 });
    } catch (e) {
      out = String((e as { stdout?: string }).stdout ?? '');
    }
    return JSON.parse(out) as { valid: boolean; errors?: unknown };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the generated OpenAPI document (/openapi.json)', () => {
  it('validates as OpenAPI 3.1 (official schema, refs resolved); the validator refuses a broken document', () => {
    expect(validateOpenApi(DOC)).toEqual({ valid: true });
    const broken = structuredClone(DOC);
    delete broken.paths['/v1/tasks/{task_id}'].get.responses['200'].description;
    broken.paths['/healthz'].get.responses['200'].$ref = '#/components/responses/NoSuchResponse';
    expect(validateOpenApi(broken).valid).toBe(false);
  });

  it('is served as generated at /openapi.json, and /docs serves Swagger UI from the edge itself (no CDN)', async () => {
    const app = express().use(FACTORIES.apiDocsRouter());
    const res = await request(app).get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expect(res.body).toEqual(DOC);
    const page = await request(app).get('/docs');
    expect(page.status).toBe(200);
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(assets.length).toBeGreaterThanOrEqual(4);
    for (const a of assets) {
      expect(a).toMatch(/^\/docs\//);
      const asset = await request(app).get(a);
      expect({ a, status: asset.status, bytes: asset.body.length > 0 || asset.text.length > 0 }).toEqual({ a, status: 200, bytes: true });
    }
    expect((await request(app).get('/docs/assets/package.json')).status).toBe(404);
    expect((await request(app).get('/docs/assets/..%2F..%2Fpackage.json')).status).toBe(404);
  });

  it("has every image and video model's request body, exactly as the registry publishes it", () => {
    for (const [body, endpoint] of [
      ['ImageGeneration', '/v1/images/generations'],
      ['VideoGeneration', '/v1/videos/generations'],
    ] as const) {
      const alternatives = (DOC.components.requestBodies[body].content['application/json'].schema.oneOf as Obj[]).map(deref);
      const models = listModelNames().filter((m) => modelSchemaDocument(m)?.parameters?.endpoint === endpoint);
      expect(models.length).toBeGreaterThan(5);
      for (const m of models) {
        const { $schema: _d, ...published } = modelSchemaDocument(m)!.parameters!.input_schema as Obj;
        const matching = alternatives.filter((a) => {
          const { description: _x, ...schema } = a;
          return JSON.stringify(schema) === JSON.stringify(published);
        });
        expect({ m, documented: matching.length }).toEqual({ m, documented: 1 });
      }
    }
  });

  it("has every art suite action's body from its contract, and the action names of the registry", () => {
    for (const [action, c] of Object.entries(ARTGEN_CONTRACTS)) {
      const { description: _x, title, ...schema } = component(`ArtAction.${action}`);
      const { $schema: _d, title: _t, ...published } = c.inputSchema as Obj;
      expect(title).toBe(`artgen ${action} request body`);
      expect({ action, schema }).toEqual({ action, schema: published });
    }
    expect(DOC.components.parameters.ArtAction.schema.enum).toEqual([...Object.keys(ARTGEN_CONTRACTS), 'action']);
  });

  it('lists every error type the error map produces, and every task failure type', () => {
    const produced = new Set<string>(Object.values(ERROR_CODES));
    for (const t of produced) expect(component('ErrorType').enum).toContain(t);
    expect(component('ErrorType').enum).toEqual(expect.arrayContaining(['not_found', 'internal_error']));
    expect(component('TaskError').properties.type.enum.sort()).toEqual(Object.values(TASK_FAILURE_TYPES).sort());
  });

  it('is an OpenAPI 3.1 document whose every $ref resolves', () => {
    expect(DOC.openapi).toBe('3.1.0');
    expect(DOC.info?.title).toEqual(expect.any(String));
    const refs = allRefs(DOC);
    expect(refs.length).toBeGreaterThan(100);
    const broken = refs.filter(({ ref }) => !ref.startsWith('#/') || pointer(ref) === undefined);
    expect(broken).toEqual([]);
  });

  it('has the reusable components and headers the API relies on', () => {
    for (const s of ['Error', 'UnifiedTask', 'ModelListItem', 'Envelope', 'AckA', 'AckB']) expect(DOC.components.schemas[s]).toBeDefined();
    for (const h of ['X-Request-Id', 'Retry-After', 'Idempotent-Replayed']) expect(DOC.components.headers[h]).toBeDefined();
    expect(DOC.components.parameters.IdempotencyKey).toMatchObject({ name: 'Idempotency-Key', in: 'header' });
    expect(DOC.components.securitySchemes).toMatchObject({ ApiKeyAuth: { type: 'http', scheme: 'bearer' }, AdminToken: { type: 'http', scheme: 'bearer' } });
  });

  // that the routes serve what the document lists, method by method, is checked through requests against the edge
  // (services/api-edge/src/openapi/openapi-routes.int.test.ts)
  describe('routes', () => {
    it('declares each path template parameter exactly once as an `in: path` parameter', () => {
      for (const o of OPERATIONS) {
        const inPath = [...((o.pathItem.parameters ?? []) as Obj[]), ...((o.op.parameters ?? []) as Obj[])].map(deref).filter((p) => p.in === 'path');
        const template = [...o.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
        expect({ op: `${o.method} ${o.path}`, params: inPath.map((p) => p.name).sort() }).toEqual({ op: `${o.method} ${o.path}`, params: template.sort() });
        for (const p of inPath) expect(p.required).toBe(true);
      }
    });
  });

  describe('operations', () => {
    it('have unique operationIds, a success response, and X-Request-Id on every response', () => {
      const ids = OPERATIONS.map((o) => o.op.operationId);
      expect(new Set(ids).size).toBe(ids.length);
      for (const o of OPERATIONS) {
        const statuses = Object.keys(o.op.responses as Obj);
        expect({ op: o.op.operationId, success: statuses.some((s) => /^2/.test(s)) }).toEqual({ op: o.op.operationId, success: true });
        for (const s of statuses) {
          const r = deref(o.op.responses[s] as Obj);
          expect({ op: o.op.operationId, s, requestId: Boolean(r.headers?.['X-Request-Id']) }).toEqual({ op: o.op.operationId, s, requestId: true });
        }
      }
    });

    it('name only defined security schemes; /v1 needs the API key except the public upload, signed result links and vendor callbacks; health is open', () => {
      const schemes = new Set(Object.keys(DOC.components.securitySchemes));
      for (const o of OPERATIONS) for (const s of securityOf(o)) expect(schemes.has(s)).toBe(true);
      for (const o of OPERATIONS.filter((x) => x.path.startsWith('/v1/'))) {
        // public: uploaded images and kept results (signed links), vendors' callbacks (signed tokens)
        const open = (o.method === 'GET' && (o.path === '/v1/uploads/{name}' || o.path === '/v1/results/{key}')) || o.path === '/v1/upstream-callbacks/{token}';
        const expected = open ? [] : ['ApiKeyAuth'];
        expect({ op: o.op.operationId, security: securityOf(o) }).toEqual({ op: o.op.operationId, security: expected });
      }
      expect(securityOf(OPERATIONS.find((o) => o.path === '/healthz')!)).toEqual([]);
      expect(securityOf(OPERATIONS.find((o) => o.path === '/readyz')!)).toEqual([]);
    });

    it('document only error statuses the error map can produce, with the error object whose code is the status', () => {
      const producible = new Set<number>(Object.values(HTTP_STATUS_OF));
      for (const o of OPERATIONS.filter((x) => x.path.startsWith('/v1/'))) {
        for (const [status, ref] of Object.entries(o.op.responses as Obj)) {
          if (Number(status) < 400) continue;
          expect({ op: o.op.operationId, status, producible: producible.has(Number(status)) }).toEqual({ op: o.op.operationId, status, producible: true });
          const media = deref(ref as Obj).content['application/json'] as Obj;
          // the art suite's dialect has no `code` (spec 7); the chat-completions one names a rule there, not the status
          const art = o.path.startsWith('/v1/artgen');
          const chat = o.path === '/v1/chat/completions';
          expect(deref(media.schema)).toBe(component(art ? 'ArtError' : chat ? 'ChatError' : 'Error'));
          for (const ex of examplesOf(media)) {
            if (chat) expect(typeof (ex.value as Obj).error.code === 'string' || (ex.value as Obj).error.code === null).toBe(true);
            else expect((ex.value as Obj).error.code).toBe(art ? undefined : Number(status));
          }
        }
      }
    });

    it('every management answer, errors included, is the {success, message, data} envelope', () => {
      for (const o of OPERATIONS.filter((x) => x.path.startsWith('/api/'))) {
        for (const r of Object.values(o.op.responses as Obj)) {
          const schema = deref((deref(r as Obj).content['application/json'] as Obj).schema as Obj);
          const envelope = schema === component('EnvelopeError') || (schema.allOf as Obj[] | undefined)?.some((p) => deref(p) === component('Envelope'));
          expect({ op: o.op.operationId, envelope }).toEqual({ op: o.op.operationId, envelope: true });
        }
      }
    });
  });

  describe('examples', () => {
    it('every JSON example matches the schema it illustrates', () => {
      const media = jsonMediaTypes();
      expect(media.length).toBeGreaterThan(30);
      let checked = 0;
      for (const { at, media: m } of media) {
        for (const ex of examplesOf(m)) {
          expectValid(m.schema as Obj, ex.value, `${at} example ${ex.name}`);
          checked++;
        }
      }
      expect(checked).toBeGreaterThan(25);
    });

    it('parameter examples match their schemas', () => {
      const params = [
        ...Object.values(DOC.components.parameters as Obj),
        ...OPERATIONS.flatMap((o) => ((o.op.parameters ?? []) as Obj[]).filter((p) => !p.$ref)),
      ] as Obj[];
      for (const p of params.filter((x) => 'example' in x)) expectValid(p.schema as Obj, p.example, `parameter ${p.name}`);
    });

    const generationExamples = (body: string) =>
      Object.entries(DOC.components.requestBodies[body].content['application/json'].examples as Obj).map(([name, e]) => ({
        name,
        body: (e as Obj).value as Obj,
      }));

    it.each([
      ['ImageGeneration', '/v1/images/generations'],
      ['VideoGeneration', '/v1/videos/generations'],
    ])("%s examples pass the model's published input_schema (Ajv 2020 strict) and belong to this endpoint", (body, endpoint) => {
      const strictAjv = new Ajv2020({ strict: true, allErrors: true });
      const examples = generationExamples(body);
      expect(examples.length).toBeGreaterThanOrEqual(2);
      for (const { name, body: b } of examples) {
        const doc = modelSchemaDocument(b.model as string);
        expect({ name, endpoint: doc?.parameters?.endpoint }).toEqual({ name, endpoint });
        const check = strictAjv.compile(doc!.parameters!.input_schema);
        if (!check(b)) throw new Error(`example ${name}: ${strictAjv.errorsText(check.errors)}`);
      }
    });

    it('gives every art suite action an example its contract accepts (published input_schema, Ajv 2020 strict)', () => {
      const strictAjv = new Ajv2020({ strict: true, allErrors: true });
      const examples = DOC.components.requestBodies.ArtAction.content['application/json'].examples as Obj;
      expect(Object.keys(examples).sort()).toEqual([...Object.keys(ARTGEN_CONTRACTS), 'action'].sort());
      for (const [action, c] of Object.entries(ARTGEN_CONTRACTS)) {
        const body = examples[action].value as Obj;
        const check = strictAjv.compile(c.inputSchema);
        if (!check(body)) throw new Error(`art example ${action}: ${strictAjv.errorsText(check.errors)}`);
        expect({ action, ok: c.validate(body, 'artgen').ok }).toEqual({ action, ok: true });
      }
    });

    it('gives the lumen-2-pro and pixel-v6 examples the brief asks for', () => {
      expect(generationExamples('ImageGeneration').map((e) => e.body.model)).toContain('lumen-2-pro');
      expect(generationExamples('VideoGeneration').map((e) => e.body.model)).toContain('pixel-v6');
    });

    it('the management request examples are accepted by the real Joi schemas', () => {
      const joiOf: Record<string, { validate(v: unknown): { error?: Error } }> = {
        createAccount: createAccountSchema,
        topupAccount: topupSchema,
        createKey: createKeySchema,
        rotateKey: rotateKeySchema,
        createChannel: createChannelSchema,
        updateChannel: updateChannelSchema,
        addChannelKeys: addChannelKeysSchema,
        updateChannelKey: updateChannelKeySchema,
        updateKey: updateKeySchema,
        testChannel: testChannelSchema,
        putPrices: putPricesSchema,
        putGroups: putGroupsSchema,
      };
      const withBodies = OPERATIONS.filter((o) => o.path.startsWith('/api/') && o.op.requestBody);
      expect(withBodies.map((o) => o.op.operationId).sort()).toEqual(Object.keys(joiOf).sort());
      for (const o of withBodies) {
        const example = o.op.requestBody.content['application/json'].example;
        expect({ op: o.op.operationId, error: joiOf[o.op.operationId].validate(example).error?.message }).toEqual({ op: o.op.operationId, error: undefined });
      }
    });
  });

  describe('the shapes the code produces match the documented schemas', () => {
    const submitApp = () => {
      const app = express();
      app.use((req, res, next) => {
        (req as unknown as { id: string }).id = 'req_0123456789abcdef';
        setPrincipal(res, principal);
        next();
      });
      app.use('/v1', FACTORIES.generationsRouter());
      app.use(routeNotFound);
      app.use(errorHandler(silent));
      return app;
    };
    const exampleBody = (body: string, model: string) =>
      Object.values(DOC.components.requestBodies[body].content['application/json'].examples as Obj)
        .map((e) => (e as Obj).value as Obj)
        .find((b) => b.model === model)!;

    it('every example submits through the real router with the documented status and acknowledgement', async () => {
      for (const [body, path] of [
        ['ImageGeneration', '/v1/images/generations'],
        ['VideoGeneration', '/v1/videos/generations'],
      ] as const) {
        for (const e of Object.values(DOC.components.requestBodies[body].content['application/json'].examples as Obj)) {
          const b = (e as Obj).value as Obj;
          const res = await request(submitApp()).post(path).send(b);
          const expected = resolveModel(b.model as string)!.contract!.ack === 'B' ? 202 : 200;
          expect({ model: b.model, status: res.status, body: res.status < 300 ? 'ack' : res.body }).toEqual({ model: b.model, status: expected, body: 'ack' });
          const documented = deref(operation('POST', path).responses[String(res.status)] as Obj);
          expectValid(documented.content['application/json'].schema as Obj, res.body, `${b.model} acknowledgement`);
        }
      }
    });

    it('the art suite: an origin example submits with the documented acknowledgement, a refusal is the art error', async () => {
      const app = express();
      app.use((req, res, next) => {
        (req as unknown as { id: string }).id = 'req_0123456789abcdef';
        setPrincipal(res, principal);
        next();
      });
      app.use('/v1/artgen', FACTORIES.artgenRouter());
      app.use(routeNotFound);
      app.use(errorHandler(silent));
      const examples = DOC.components.requestBodies.ArtAction.content['application/json'].examples as Obj;
      for (const action of ['imagine', 'blend', 'edits', 'video', 'describe']) {
        const res = await request(app).post(`/v1/artgen/generations/${action}`).send(examples[action].value);
        expect({ action, status: res.status }).toEqual({ action, status: 200 });
        expectValid(component('ArtAck'), res.body, `${action} acknowledgement`);
      }
      const bare = await request(app)
        .post('/v1/artgen/generations')
        .send(operation('POST', '/v1/artgen/generations').requestBody.content['application/json'].example);
      expectValid(component('ArtAck'), bare.body, 'imagine acknowledgement');
      const missing = await request(app).post('/v1/artgen/generations/upscale').send(examples.upscale.value);
      expect(missing.status).toBe(404);
      expectValid(component('ArtError'), missing.body, 'missing parent');
      const bad = await request(app)
        .post('/v1/artgen/generations/blend')
        .send({ image_urls: ['https://cdn.example.com/a.png'] });
      expect(bad.status).toBe(400);
      expectValid(component('ArtError'), bad.body, 'art refusal');
    });

    it('the native art task in every state', () => {
      const base = taskRecord({
        id: 'task_art1',
        accountId: 'a',
        apiKeyId: 'k',
        model: 'artgen',
        requestedModel: 'artgen',
        pool: 'artgen',
        price: toMinor(0.04),
        priceSnapshot: {},
        deadlineAt: new Date(),
        request: { derived: { action: 'upscale', version: 'v7' }, upstreamBody: { prompt: 'x' } } as never,
      });
      const done = new Date('2025-11-22T00:00:30Z');
      const rows: TaskRecord[] = [
        base,
        { ...base, status: 'processing', progress: 40, startedAt: done },
        { ...base, status: 'processing', native: { status: 'MODAL' } },
        {
          ...base,
          status: 'completed',
          progress: 100,
          completedAt: done,
          result: { images: [{ url: 'https://cdn.example.com/u.png' }] },
          native: { status: 'SUCCESS', width: 2048, height: 2048 },
        },
        { ...base, status: 'failed', completedAt: done, error: { code: 'task_failed', message: 'Task timeout', type: 'timeout' } },
      ];
      for (const row of rows) {
        const view = toArtgenNativeTask(row);
        expectValid(component('ArtTask'), view, `${row.status} art task`);
      }
      expect(toArtgenNativeTask(rows[3]).buttons.length).toBe(9);
    });

    it('spark-imagine-image-2.0 answers 202 shape B and echoes X-Service-Response-Version', async () => {
      const res = await request(submitApp())
        .post('/v1/images/generations')
        .set('X-Service-Response-Version', '2026-08-01')
        .send(exampleBody('ImageGeneration', 'spark-imagine-image-2.0'));
      expect(res.status).toBe(202);
      expect(res.headers['x-service-response-version']).toBe('2026-08-01');
      expect(deref(operation('POST', '/v1/images/generations').responses['202']).headers['X-Service-Response-Version']).toBeDefined();
      expectValid(component('AckB'), res.body, 'shape B');
      expect(res.body.request_id).toBe('req_0123456789abcdef');
    });

    it('a contract refusal is a documented error status with the error object', async () => {
      const res = await request(submitApp())
        .post('/v1/videos/generations')
        .send({ ...exampleBody('VideoGeneration', 'Omni-Flash-Ext'), duration: 5 });
      expect(res.status).toBe(400);
      expect(res.body.error.type).toBe('invalid_duration');
      expectValid(component('Error'), res.body, 'contract refusal');
    });

    it('every model with a contract acknowledges with a status its endpoint documents', () => {
      for (const m of listModels().filter((x) => x.contract && x.contract.ack !== 'artgen')) {
        const status = m.contract!.ack === 'B' ? '202' : '200';
        expect({ model: m.id, documented: Boolean(operation('POST', m.contract!.endpoint).responses[status]) }).toEqual({ model: m.id, documented: true });
      }
    });

    it('the error object of every domain error code, with its mapped status', () => {
      const types = new Set(component('ErrorType').enum as string[]);
      for (const [code, type] of Object.entries(ERROR_CODES)) {
        expect({ code, documented: types.has(type) }).toEqual({ code, documented: true });
        const status = HTTP_STATUS_OF[code as keyof typeof HTTP_STATUS_OF];
        expectValid(component('Error'), errorBody('standard', status, type, 'm'), `error ${code}`);
        expectValid(component('Error'), errorBody('messages', status, type, 'm'), `messages error ${code}`);
        expectValid(component('ChatError'), errorBody('chat', status, type, 'm', { field: 'model', rule: 'required' }), `chat error ${code}`);
        expectValid(component('ChatError'), errorBody('chat', status, type, 'm'), `chat error ${code} without a field`);
      }
    });

    it('the catalog list in every expand and category, an unknown whitelisted name included', () => {
      expect(component('Category').enum).toEqual([...CATALOG_CATEGORIES]);
      const expandParam = (operation('GET', '/v1/models').parameters as Obj[]).find((p) => p.name === 'expand')!;
      expect(expandParam.schema.enum).toEqual([...CATALOG_EXPANDS]);
      for (const expand of [undefined, 'category', 'parameters', 'bogus']) {
        for (const category of [undefined, ...CATALOG_CATEGORIES]) {
          const data = listCatalog({ keyModels: null, groupModels: null, expand, category });
          expectValid(component('ModelList'), { success: true, object: 'list', data }, `catalog expand=${expand} category=${category}`);
          for (const item of data) expectNoUndocumentedKeys(component('ModelListItem'), item, `catalog item ${item.id}`);
        }
      }
      const custom = listCatalog({ keyModels: ['lumen-2-pro', 'acme/custom-model'], groupModels: null, expand: 'category' });
      expect(custom.some((i) => i.category === 'unknown')).toBe(true);
      expectValid(component('ModelList'), { success: true, object: 'list', data: custom }, 'catalog with an unknown name');
    });

    it('the schema document of every model name', () => {
      const names = listModelNames();
      expect(names.length).toBeGreaterThan(20);
      for (const name of names) {
        const doc = modelSchemaDocument(name)!;
        expectValid(component('ModelSchemaDocument'), doc, `schema document of ${name}`);
        expectNoUndocumentedKeys(component('ModelSchemaDocument'), doc, `schema document of ${name}`);
        if (doc.parameters) expectNoUndocumentedKeys(component('ModelParameters'), doc.parameters, `parameters of ${name}`);
      }
      const custom = customModelSchemaDocument('acme/custom-model', { chat: true })!;
      expectValid(component('ModelSchemaDocument'), custom, 'schema document of a custom name');
      expectNoUndocumentedKeys(component('ModelSchemaDocument'), custom, 'schema document of a custom name');
      expectNoUndocumentedKeys(component('ModelParameters'), custom.parameters!, 'parameters of a custom name');
      const listed = listCatalog({ keyModels: ['acme/custom-model'], groupModels: null, expand: 'parameters' });
      expectValid(component('ModelList'), { success: true, object: 'list', data: listed }, 'catalog with a custom name and parameters');
    });

    it('docs/versioning.md lists the image result fields the TaskResult schema defines, no more and no less', () => {
      const doc = readFileSync(join(ROOT, 'docs/versioning.md'), 'utf8');
      const start = doc.indexOf('## Image result fields');
      const section = doc.slice(start, doc.indexOf('\n## ', start + 1));
      const listed = [...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]);
      expect(listed).toEqual(Object.keys(component('TaskResult').properties.images.items.properties));
    });

    it('the unified task when pending, completed (image, video) and failed; failure types are the documented ones', () => {
      const t = (model: string, over: Partial<TaskRecord>) =>
        taskRecord(
          {
            id: 'task_abc123',
            accountId: 'a',
            apiKeyId: 'k',
            model,
            requestedModel: model,
            pool: resolveModel(model)!.pool!,
            request: {} as never,
            price: toMinor(0.05),
            priceSnapshot: {},
            deadlineAt: new Date(),
          },
          over,
        );
      const done = new Date('2025-11-22T00:00:30Z');
      const image: TaskResult = { images: [{ url: 'https://cdn.example.com/a.png', width: 1024, height: 1024, format: 'png' }] };
      const video: TaskResult = { videos: [{ url: ['https://cdn.example.com/a.mp4'], expires_at: 1763856490, duration: 5 }] };
      const rows = [
        t('lumen-2-pro', {}),
        t('lumen-2-pro', { status: 'processing', progress: 40 }),
        t('lumen-2-pro', { status: 'completed', progress: 100, completedAt: done, result: image }),
        t('pixel-v6', { status: 'completed', progress: 100, completedAt: done, result: video }),
        t('pixel-v6', { status: 'failed', completedAt: done, error: { code: 'task_failed', message: 'Task timeout', type: TASK_FAILURE_TYPES.timeout } }),
      ];
      for (const row of rows) {
        const task = toUnifiedTask(row);
        expectValid(component('TaskEnvelope'), { code: 200, data: task }, `${row.status} ${row.model} task`);
        expectNoUndocumentedKeys(component('UnifiedTask'), task, `${row.status} task`);
      }
      expect(toUnifiedTask(rows[4]).cost).toBe(0);
      expect([...component('TaskError').properties.type.enum].sort()).toEqual(Object.values(TASK_FAILURE_TYPES).sort());
    });

    it('avatar assets: request examples parse, and the ack, pages, asset, group and avatar task the code builds match', () => {
      const examples = Object.values(operation('POST', '/v1/motion2/private-avatar').requestBody.content['application/json'].examples as Obj);
      expect(examples.length).toBeGreaterThanOrEqual(2);
      for (const e of examples) expect(() => parseAvatarRequest((e as Obj).value)).not.toThrow();
      expectValid(component('AckC'), shapeC('task_abc123'), 'shape C');
      const at = new Date('2025-11-22T00:00:00Z');
      const base = {
        id: 'asset_a1',
        accountId: 'a',
        groupId: 'group_g1',
        taskId: 'task_t1',
        position: 0,
        assetType: 'Image' as const,
        name: 'n',
        url: 'https://cdn.example.com/a.png',
        projectName: 'default',
        createdAt: at,
        updatedAt: at,
      };
      const assets = [
        { ...base, status: 'Active' as const, reason: null },
        { ...base, id: 'asset_a2', status: 'Rejected' as const, reason: 'moderation' },
      ];
      for (const a of assets) {
        expectValid(component('AvatarAsset'), assetView(a), `asset ${a.status}`);
        expectNoUndocumentedKeys(component('AvatarAsset'), assetView(a), `asset ${a.status}`);
      }
      expectValid(
        component('AvatarAssetList'),
        page(assets, true, (a) => a.id, assetView),
        'asset page',
      );
      const group = { id: 'group_g1', accountId: 'a', name: 'g', description: '', autoCreated: true, assetCount: 2, createdAt: at };
      expectValid(component('AvatarGroup'), groupView(group), 'group');
      expectNoUndocumentedKeys(component('AvatarGroup'), groupView(group), 'group');
      expectValid(
        component('AvatarGroupList'),
        page([group], false, (g) => g.id, groupView),
        'group page',
      );
      const listed = [
        { asset_id: 'asset_a1', asset_url: 'asset://asset_a1', status: 'Active' },
        { asset_id: 'asset_a2', asset_url: 'asset://asset_a2', status: 'Rejected', reason: 'moderation' },
      ];
      const task = toUnifiedTask(
        taskRecord(
          {
            id: 'task_t1',
            accountId: 'a',
            apiKeyId: 'k',
            model: 'motion-2.0-avatar',
            requestedModel: 'motion-2.0-avatar',
            pool: 'avatar',
            request: {} as never,
            price: toMinor(0.04),
            priceSnapshot: {},
            deadlineAt: at,
          },
          { status: 'completed', progress: 100, completedAt: at, captureAmount: toMinor(0.02), result: { assets: listed, usable_assets: [listed[0]!] } },
        ),
      );
      expect(task.cost).toBe(0.02);
      expectValid(component('TaskEnvelope'), { code: 200, data: task }, 'avatar task');
      for (const a of listed) expectNoUndocumentedKeys(component('AssetResult'), a, 'listed asset');
    });

    it('the upload answer of the real use case', async () => {
      const data = await uploadImage(
        { storage: noStorage, publicBaseUrl: PUBLIC_BASE_URL, limits: { maxBytes: 1024 * 1024, ttlSeconds: 86400, ...DEFAULT_SIDE_LIMITS } },
        { bytes: await renderImage('png', 40, 30), accountId: principal.accountId, field: 'file' },
      );
      expectValid(component('UploadResponse'), { code: 200, data }, 'upload answer');
    });

    it('the management views (account, balance, key, channel)', () => {
      const at = new Date('2025-11-22T00:00:00Z');
      const account = accountView({
        id: principal.accountId,
        name: 'acme',
        groupName: 'default',
        available: toMinor(9.25),
        held: toMinor(0.5),
        spent: toMinor(0.25),
        createdAt: at,
      });
      expectValid(component('Account'), account, 'account');
      expectNoUndocumentedKeys(component('Account'), account, 'account');
      expectValid(component('Balance'), { account_id: account.id, ...account }, 'balance');
      const keyRecord = {
        id: principal.keyId,
        accountId: principal.accountId,
        name: 'k',
        prefix: 'sk-AbCd…',
        models: null,
        groupName: null,
        rpsLimit: 5,
        inflightLimit: null,
        status: 'revoked',
        createdAt: at,
        revokedAt: at,
        cap: { maxSpend: toMinor(12.5), window: 'day' },
        expiresAt: at,
        rotatedAt: at,
        previousValidUntil: at,
        spent: toMinor(3.25),
      } as const;
      const key = keyView(keyRecord);
      expectValid(component('KeyWithSecret'), { ...key, key: 'sk-secret' }, 'key');
      expectNoUndocumentedKeys(component('Key'), key, 'key');
      expectValid(component('Key'), keyView({ ...keyRecord, cap: null, spent: null, expiresAt: null }), 'uncapped key');
      const group = usageGroupView({
        day: '2025-11-22',
        model: 'lumen-2-flex',
        channel_id: null,
        tasks: 3,
        task_failures: 1,
        chat_calls: 0,
        chat_failures: 0,
        spend: toMinor(0.75),
        task_p50_ms: 9313,
        task_p99_ms: 22737,
        chat_p50_ms: null,
        chat_p99_ms: null,
      });
      const report = { from: 1763769600, to: 1763856000, group_by: ['day', 'model', 'channel'], counted_until: null, groups: [group] };
      expectValid(component('UsageReport'), report, 'usage report');
      expectNoUndocumentedKeys(component('UsageGroup'), group, 'usage group');

      const channel = channelView({
        id: principal.keyId,
        name: 'sim',
        protocol: 'gateway',
        baseUrl: 'http://127.0.0.1:9090',
        models: null,
        groups: ['default'],
        priority: 0,
        weight: 1,
        enabled: true,
      });
      expectValid(component('Channel'), channel, 'channel');
      expectNoUndocumentedKeys(component('Channel'), channel, 'channel');
    });
  });

  describe('security matches what the routers enforce', () => {
    const mgmtApp = () => express().use('/api', FACTORIES.createManagementRouter());
    const concrete = (path: string) => path.replace(/\{[^}]+\}/g, '6f1c0e4e-2b1a-4c55-9a43-0d8c1f0b7e21');
    const send = (app: express.Express, o: Operation, token?: string) => {
      let r = (request(app) as unknown as Record<string, (p: string) => request.Test>)[o.method.toLowerCase()](concrete(o.path));
      if (token) r = r.set('Authorization', `Bearer ${token}`);
      return ['POST', 'PUT', 'PATCH'].includes(o.method) ? r.send({}) : r;
    };

    it('admin routes take the admin token and refuse an API key; key routes the reverse; nothing without a token', async () => {
      const ops = OPERATIONS.filter((o) => o.path.startsWith('/api/'));
      expect(
        ops
          .filter((o) => securityOf(o).includes('ApiKeyAuth'))
          .map((o) => o.path)
          .sort(),
      ).toEqual(['/api/balance', '/api/logs', '/api/usage/self', '/api/webhooks/deliveries', '/api/webhooks/secret', '/api/webhooks/secret/rotate']);
      for (const o of ops) {
        const [scheme] = securityOf(o);
        const asAdmin = await send(mgmtApp(), o, ADMIN_TOKEN);
        const asKey = await send(mgmtApp(), o, API_KEY);
        const anonymous = await send(mgmtApp(), o);
        const accepted = scheme === 'AdminToken' ? asAdmin : asKey;
        const refused = scheme === 'AdminToken' ? asKey : asAdmin;
        expect({ op: o.op.operationId, accepted: accepted.status !== 401, refused: refused.status, anonymous: anonymous.status }).toEqual({
          op: o.op.operationId,
          accepted: true,
          refused: 401,
          anonymous: 401,
        });
        expect(anonymous.body).toEqual({ success: false, message: expect.any(String), data: null });
      }
    });

    it('the upload link is public and the upload itself needs a key', async () => {
      const app = express()
        .use('/v1/uploads', FACTORIES.createUploadsRouter() as RequestHandler)
        .use(routeNotFound)
        .use(errorHandler(silent));
      const link = await request(app).get('/v1/uploads/img_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.png');
      expect(link.status).toBe(404);
      const upload = await request(app).post('/v1/uploads/images').send({ image: 'AAAA' });
      expect(upload.status).toBe(401);
      expectValid(component('Error'), upload.body, 'upload without a key');
    });
  });
});
