import type { ModelContract, ModelDefinition, NormalizedRequest, ValidateOptions, ValidationOutcome } from './types';
import { MODEL_DEFINITIONS } from './model-definitions';

const MODELS: readonly ModelDefinition[] = Object.freeze(MODEL_DEFINITIONS.map((m) => Object.freeze(m)));

const BY_NAME: ReadonlyMap<string, ModelDefinition> = (() => {
  const map = new Map<string, ModelDefinition>();
  for (const m of MODELS) {
    for (const name of [m.id, ...m.aliases]) {
      if (map.has(name)) throw new Error(`model name ${name} is registered twice`);
      map.set(name, m);
    }
  }
  return map;
})();

/** Every model of the catalog, canonical ids only. */
export function listModels(): readonly ModelDefinition[] {
  return MODELS;
}

/** Resolves a model id or alias to its definition. */
export function resolveModel(name: string): ModelDefinition | undefined {
  return BY_NAME.get(name);
}

/** Every callable name (ids and aliases). */
export function listModelNames(): string[] {
  return [...BY_NAME.keys()];
}

/** Validates a submission body for a model (contract required). */
export function validateRequest(model: ModelDefinition, body: unknown, requestedModel: string, opts?: ValidateOptions): ValidationOutcome {
  if (!model.contract) throw new Error(`model ${model.id} has no request contract`);
  return model.contract.validate(body, requestedModel, opts);
}

/**
 * The contract a normalized request was validated against: the model's own, or for a model served on several
 * paths (the art suite) the contract of the request's action (`derived.action`).
 */
export function requestContract(req: Pick<NormalizedRequest, 'model' | 'derived'>): ModelContract | undefined {
  const m = resolveModel(req.model);
  if (!m) return undefined;
  if (m.contract) return m.contract;
  const action = req.derived?.action;
  return typeof action === 'string' ? m.actionContracts?.[action] : undefined;
}
