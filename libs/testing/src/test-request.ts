import { resolveModel, validateRequest, type NormalizedRequest } from '@gmg/contracts';

/** A request the way api-edge builds it, from the real model registry (throws on a body the contract refuses). */
export function normalizedRequest(body: Record<string, unknown>): NormalizedRequest {
  const model = resolveModel(String(body.model));
  if (!model) throw new Error(`unknown model ${String(body.model)}`);
  const out = validateRequest(model, body, String(body.model));
  if (!out.ok) throw new Error(out.violation.message);
  return out.value;
}
