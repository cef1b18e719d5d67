import type { ModelDefinition, ValidationOutcome } from './types';

// PLACEHOLDER: replaced by the contracts work (lumen-2 first, then every model of the spec).
const MODELS: readonly ModelDefinition[] = Object.freeze([]);

/** Every model of the catalog, canonical ids only. */
export function listModels(): readonly ModelDefinition[] {
  return MODELS;
}

/** Resolves a model id or alias to its definition. */
export function resolveModel(name: string): ModelDefinition | undefined {
  return MODELS.find((m) => m.id === name || m.aliases.includes(name));
}

/** Validates a submission body for a model (contract required). */
export function validateRequest(model: ModelDefinition, body: unknown, requestedModel: string): ValidationOutcome {
  if (!model.contract) throw new Error(`model ${model.id} has no request contract`);
  return model.contract.validate(body, requestedModel);
}
