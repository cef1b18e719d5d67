import type { AckShape, Category, JsonSchema, ModelContract, ModelDefinition, Operation } from './models/types';
import { baseContract } from './models/base-contract';
import { listModels, resolveModel } from './models/registry';

/** `parameters` block of spec 2.4. */
export interface ModelParameters {
  operation: Operation;
  method: 'POST';
  endpoint: string;
  schema_version: string;
  source: string;
  input_schema: JsonSchema;
  /** The largest request body accepted, bytes as sent (413 above it). Additive. */
  max_body_bytes: number;
  /**
   * A model served on several paths, each path's request schema. Optional, additive. The art suite: keyed by action;
   * a custom name (source `base`): keyed by operation, one per endpoint it is callable on.
   */
  actions?: Record<string, { method: 'POST'; endpoint: string; input_schema: JsonSchema; max_body_bytes: number }>;
}

/** One item of `GET /v1/models` (spec 2.4). */
export interface ModelListItem {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  supported_endpoint_types: string[];
  category?: Category;
  capability_tags?: string[];
  parameters?: ModelParameters;
}

export interface CatalogOptions {
  /** The key's model restriction list; null = no restriction. */
  keyModels: readonly string[] | null;
  /** The models of the key's group; null = no restriction. */
  groupModels: readonly string[] | null;
  expand?: string;
  category?: string;
  /**
   * Custom names (no registry entry) a messages channel lists by name, so that `POST /v1/messages` and
   * `POST /v1/chat/completions` serve them too
   * (the edge asks its channels; the catalog cannot).
   */
  customChatModels?: ReadonlySet<string>;
}

export const CATALOG_EXPANDS = ['category', 'parameters'] as const;
export const CATALOG_CATEGORIES: readonly Category[] = ['chat', 'image', 'video', 'audio', 'unknown'];

/** Every name a list may mention for a model (its id and aliases are interchangeable, spec 9). */
const namesOf = (m: ModelDefinition): string[] => [m.id, ...m.aliases];

function listAllows(list: readonly string[] | null, name: string): boolean {
  if (list === null) return true;
  const m = resolveModel(name);
  return m ? namesOf(m).some((n) => list.includes(n)) : list.includes(name);
}

/** Whether a key with these restriction lists may call a model (alias-aware: allowing an id allows its aliases). */
export function isModelAllowed(modelId: string, keyModels: readonly string[] | null, groupModels: readonly string[] | null): boolean {
  return listAllows(keyModels, modelId) && listAllows(groupModels, modelId);
}

function parametersOf(m: ModelDefinition): ModelParameters | undefined {
  if (m.actionContracts) return actionParametersOf(m.actionContracts);
  const c = m.contract;
  if (!c || (m.category !== 'image' && m.category !== 'video')) return undefined;
  return {
    operation: c.operation,
    method: c.method,
    endpoint: c.endpoint,
    schema_version: c.schemaVersion,
    source: c.source,
    input_schema: c.inputSchema,
    max_body_bytes: c.maxBodyBytes,
  };
}

/** The art suite: the bare path (imagine) as the main schema, every action under `actions`. */
function actionParametersOf(contracts: Readonly<Record<string, ModelContract>>): ModelParameters | undefined {
  const main = contracts.imagine ?? Object.values(contracts)[0];
  if (!main) return undefined;
  const actions = Object.fromEntries(
    Object.entries(contracts).map(([name, c]) => [
      name,
      { method: c.method, endpoint: c.endpoint, input_schema: c.inputSchema, max_body_bytes: c.maxBodyBytes },
    ]),
  );
  return {
    operation: main.operation,
    method: main.method,
    endpoint: main.endpoint,
    schema_version: main.schemaVersion,
    source: main.source,
    input_schema: main.inputSchema,
    max_body_bytes: main.maxBodyBytes,
    actions,
  };
}

/**
 * A custom name (spec 2.4 `unknown`: in a key's list, no registry entry) is callable through the base (passthrough)
 * contract on the image and on the video endpoint, whichever the request comes in on (submit-task's customModelFor),
 * and on the messages and chat-completions endpoints when a messages channel lists it by name.
 */
const CUSTOM_OPERATIONS: readonly Operation[] = ['image_generation', 'video_generation'];
const ENDPOINT_TYPE_OF: Readonly<Record<Operation, string>> = { image_generation: 'image-generation', video_generation: 'video-generation' };

/** The wire protocols a chat model is served on (the two endpoints share one call: docs/chat.md). */
const CHAT_ENDPOINT_TYPES = ['messages', 'chat-completions'];

const customEndpointTypes = (chat: boolean): string[] => [...CUSTOM_OPERATIONS.map((op) => ENDPOINT_TYPE_OF[op]), ...(chat ? CHAT_ENDPOINT_TYPES : [])];

/** A custom name's base contracts: the image one as the main schema, each endpoint's under `actions` (by operation). */
function customParametersOf(name: string): ModelParameters {
  const contracts = Object.fromEntries(CUSTOM_OPERATIONS.map((op) => [op, baseContract(name, op)]));
  return actionParametersOf(contracts)!;
}

function itemOf(name: string, m: ModelDefinition | undefined, expand: 'category' | 'parameters' | undefined, customChat = false): ModelListItem {
  const item: ModelListItem = m
    ? { id: name, object: 'model', created: m.created, owned_by: m.ownedBy, supported_endpoint_types: [...m.supportedEndpointTypes] }
    : { id: name, object: 'model', created: 0, owned_by: 'custom', supported_endpoint_types: customEndpointTypes(customChat) };
  if (!expand) return item;
  item.category = m?.category ?? 'unknown';
  if (m && m.capabilityTags.length) item.capability_tags = [...m.capabilityTags];
  if (expand === 'parameters') {
    const p = m ? parametersOf(m) : customParametersOf(name);
    if (p) item.parameters = p;
  }
  return item;
}

/**
 * `GET /v1/models` (spec 2.4, 4.1 rules 1-3). The scope (which ids) never depends on `expand`; `category`
 * filters only together with a recognized `expand`; an unrecognized `expand` gives the legacy basic list.
 */
export function listCatalog(opts: CatalogOptions): ModelListItem[] {
  const expand = (CATALOG_EXPANDS as readonly string[]).includes(opts.expand ?? '') ? (opts.expand as 'category' | 'parameters') : undefined;
  const items: ModelListItem[] = [];
  const seen = new Set<string>();
  for (const m of listModels()) {
    for (const name of namesOf(m)) {
      if (!isModelAllowed(name, opts.keyModels, opts.groupModels)) continue;
      seen.add(name);
      items.push(itemOf(name, m, expand));
    }
  }
  // names a key whitelists without catalog metadata are still callable: list them as `unknown`
  for (const name of opts.keyModels ?? []) {
    if (seen.has(name) || resolveModel(name) || !listAllows(opts.groupModels, name)) continue;
    seen.add(name);
    items.push(itemOf(name, undefined, expand, opts.customChatModels?.has(name) ?? false));
  }
  if (expand && opts.category) return items.filter((i) => i.category === opts.category);
  return items;
}

/** `idempotency` block of the schema document: how `Idempotency-Key` behaves on submissions. */
export const IDEMPOTENCY_CONTRACT = Object.freeze({
  supported: true,
  header: 'Idempotency-Key',
  max_length: 255,
  scope: 'api_key',
  retention_seconds: 86400,
  replay: 'the same key with the same body within the retention window returns the original acknowledgement (same task_id); no new task, no new charge',
  conflict: { status: 409, type: 'invalid_request_error', when: 'the same key is sent again while the first request is still being processed' },
  mismatch: { status: 422, type: 'invalid_request_error', when: 'the same key is sent with a different body' },
});

const ACKS: Record<Exclude<AckShape, 'artgen'>, Record<string, unknown>> = {
  A: { shape: 'A', http_status: 200, fields: { code: 200, data: [{ status: 'submitted', task_id: 'task_…' }] }, task_id_path: 'data[0].task_id' },
  B: {
    shape: 'B',
    http_status: 202,
    fields: {
      code: 202,
      request_id: 'string',
      data: { id: 'task_…', object: 'generation.task', type: 'image', status: 'pending', progress: 0, poll_url: '/v1/tasks/<task_id>' },
    },
    task_id_path: 'data.id',
  },
  C: {
    shape: 'C',
    http_status: 200,
    fields: { code: 200, data: { id: 'task_…', object: 'motion.avatar.asset.task', status: 'processing', progress: 0, model: 'string' } },
    task_id_path: 'data.id',
  },
};

/** The art suite's acknowledgement (its own shape; docs/artgen.md). */
const ARTGEN_ACK = {
  shape: 'artgen',
  http_status: 200,
  fields: { code: 200, data: { task_id: 'task_…', action: 'IMAGINE', status: 'SUBMITTED' } },
  task_id_path: 'data.task_id',
};

const resultFieldsOf = (operation: Operation): Record<string, string> =>
  operation === 'image_generation'
    ? { 'data.result.images[].url': 'string' }
    : { 'data.result.videos[].url': 'string[] (the file is the first element)', 'data.result.videos[].expires_at': 'integer (Unix seconds)' };

function responseContract(c: ModelContract, resultFields: Record<string, string> = resultFieldsOf(c.operation)): Record<string, unknown> {
  return {
    ack: c.ack === 'artgen' ? ARTGEN_ACK : ACKS[c.ack],
    poll: {
      method: 'GET',
      path: '/v1/tasks/{task_id}',
      first_poll_after_seconds: Math.round(c.pollIntervalMs.min / 1000),
      interval_seconds: { min: Math.round(c.pollIntervalMs.min / 1000), max: Math.round(c.pollIntervalMs.max / 1000) },
      estimated_seconds: c.estimatedSeconds,
    },
    task: {
      envelope: '{code, data}',
      status_values: ['pending', 'processing', 'completed', 'failed'],
      terminal: ['completed', 'failed'],
      result_fields: resultFields,
      error_fields: { 'data.error.code': 'task_failed', 'data.error.message': 'string', 'data.error.type': 'string (optional)' },
      failed_http_status: 200,
      cost_on_failure: 0,
    },
    server_rules: c.serverRules,
  };
}

export type ModelSchemaDocument = ModelListItem & { idempotency?: unknown; response_contract?: unknown };

/** `GET /v1/models/{model}/schema`: one item with parameters plus idempotency and response-contract blocks. */
export function modelSchemaDocument(name: string): ModelSchemaDocument | undefined {
  const m = resolveModel(name);
  if (!m) return undefined;
  const item = itemOf(name, m, 'parameters');
  // a model served on several paths describes its main (bare-path) contract; each action's schema is in parameters
  const main = m.contract ?? m.actionContracts?.imagine ?? Object.values(m.actionContracts ?? {})[0];
  if (!main) return item;
  return { ...item, idempotency: IDEMPOTENCY_CONTRACT, response_contract: responseContract(main) };
}

/**
 * The schema document of a custom name the key may call (the caller checks that): its passthrough (base) contract on
 * each endpoint — `parameters` (image endpoint) with `actions` per operation — and the response contract of the image
 * endpoint, whose result fields name both (a task on the video endpoint polls every 5-10 s and answers videos).
 */
export function customModelSchemaDocument(name: string, opts: { chat?: boolean } = {}): ModelSchemaDocument | undefined {
  if (resolveModel(name)) return undefined;
  const item = itemOf(name, undefined, 'parameters', opts.chat ?? false);
  const resultFields = Object.fromEntries(
    CUSTOM_OPERATIONS.flatMap((op) => Object.entries(resultFieldsOf(op)).map(([k, v]) => [k, `${v} (POST ${baseContract(name, op).endpoint})`])),
  );
  return { ...item, idempotency: IDEMPOTENCY_CONTRACT, response_contract: responseContract(baseContract(name, 'image_generation'), resultFields) };
}
