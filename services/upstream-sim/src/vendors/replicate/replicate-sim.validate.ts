import type { InputProp, SimModel } from './replicate-sim.models';

/**
 * One entry of a 422 "Input validation failed" answer's `invalid_fields`. The shape `{type, field, description}` and
 * the wording follow the JSON-schema validator messages Replicate answers with (guess: reconstructed from answers seen
 * in client issues, not from a reference page).
 */
interface InvalidField {
  type: string;
  field: string;
  description: string;
}

const typeName = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v);
const isFile = (v: unknown): boolean => typeof v === 'string' && /^(https?:\/\/|data:)/i.test(v);

function checkValue(name: string, p: InputProp, v: unknown): InvalidField | undefined {
  const field = `input.${name}`;
  const wrongType = (expected: string) => ({ type: 'invalid_type', field, description: `Invalid type. Expected: ${expected}, given: ${typeName(v)}` });
  switch (p.type) {
    case 'string':
      if (typeof v !== 'string') return wrongType('string');
      break;
    case 'integer':
      if (!Number.isInteger(v)) return wrongType('integer');
      break;
    case 'number':
      if (typeof v !== 'number') return wrongType('number');
      break;
    case 'boolean':
      if (typeof v !== 'boolean') return wrongType('boolean');
      break;
    case 'file':
      if (typeof v !== 'string') return wrongType('string');
      if (!isFile(v)) return { type: 'format', field, description: "Does not match format 'uri'" };
      break;
    case 'files':
      if (!Array.isArray(v)) return wrongType('array');
      if (p.maxItems !== undefined && v.length > p.maxItems)
        return { type: 'array_max_items', field, description: `Array must have at most ${p.maxItems} items` };
      if (!v.every(isFile)) return { type: 'format', field, description: 'Each item must be a URI (http(s) or data:)' };
      break;
  }
  if (p.enum && !p.enum.includes(v as string | number)) {
    return { type: 'enum', field, description: `${name} must be one of the following: ${p.enum.map((e) => JSON.stringify(e)).join(', ')}` };
  }
  if (typeof v === 'number' && p.min !== undefined && v < p.min) return { type: 'number_gte', field, description: `Must be greater than or equal to ${p.min}` };
  if (typeof v === 'number' && p.max !== undefined && v > p.max) return { type: 'number_lte', field, description: `Must be less than or equal to ${p.max}` };
  return undefined;
}

/** Every problem of a prediction's `input` against the model's schema (empty: valid). */
export function validateInput(model: SimModel, input: unknown): InvalidField[] {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return [{ type: 'invalid_type', field: 'input', description: `Invalid type. Expected: object, given: ${typeName(input)}` }];
  }
  const body = input as Record<string, unknown>;
  const out: InvalidField[] = [];
  for (const name of model.required) {
    if (body[name] === undefined) out.push({ type: 'required', field: 'input', description: `${name} is required` });
  }
  for (const [name, v] of Object.entries(body)) {
    const p = model.props[name];
    if (!p) out.push({ type: 'additional_property_not_allowed', field: 'input', description: `Additional property ${name} is not allowed` });
    else {
      const bad = checkValue(name, p, v);
      if (bad) out.push(bad);
    }
  }
  return out;
}
