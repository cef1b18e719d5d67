import type { ModelDefinition } from '@gmg/contracts';

/**
 * Whether a key may call a model: the key's restriction list and its group's list each allow it (null = no
 * restriction). Aliases are interchangeable with their main name (spec 9), so either spelling in a list counts.
 * TODO(contracts): replace with `isModelAllowed` from @gmg/contracts once it lands, keeping these semantics.
 */
export function isModelAllowedFor(model: ModelDefinition, keyModels: readonly string[] | null, groupModels: readonly string[] | null): boolean {
  const names = [model.id, ...model.aliases];
  const permits = (list: readonly string[] | null) => list === null || names.some((n) => list.includes(n));
  return permits(keyModels) && permits(groupModels);
}
