import type { JsonSchema } from './types';
import { caseInsensitivePattern, type BodySpec, type FieldSpec } from './field-dsl';

export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/** One field of the DSL as JSON Schema 2020-12. */
export function fieldToJsonSchema(f: FieldSpec): JsonSchema | boolean {
  if (f.type === 'forbidden') return false;
  const s: JsonSchema = { type: f.type };
  if (f.description) s.description = f.description;
  switch (f.type) {
    case 'string':
      if (f.enum && f.orPattern) s.anyOf = [{ enum: [...f.enum] }, { pattern: f.orPattern }];
      else if (f.enum && f.caseInsensitive) s.pattern = caseInsensitivePattern(f.enum);
      else if (f.enum) s.enum = [...f.enum];
      if (f.pattern) {
        if (s.pattern) s.allOf = [{ pattern: f.pattern }];
        else s.pattern = f.pattern;
      }
      if (f.minLength !== undefined) s.minLength = f.minLength;
      if (f.maxLength !== undefined) s.maxLength = f.maxLength;
      break;
    case 'integer':
    case 'number':
      if (f.enum) s.enum = [...f.enum];
      if (f.minimum !== undefined) s.minimum = f.minimum;
      if (f.maximum !== undefined) s.maximum = f.maximum;
      break;
    case 'array':
      s.items = fieldToJsonSchema(f.items);
      if (f.minItems !== undefined) s.minItems = f.minItems;
      if (f.maxItems !== undefined) s.maxItems = f.maxItems;
      if (f.counts) s.anyOf = f.counts.map((c) => ({ minItems: c, maxItems: c }));
      break;
    case 'object':
      s.properties = mapProps(f.properties);
      if (f.required?.length) s.required = [...f.required];
      s.additionalProperties = f.additionalProperties;
      break;
    case 'boolean':
      break;
  }
  if (f.default !== undefined) s.default = f.default;
  return s;
}

function mapProps(props: Readonly<Record<string, FieldSpec>>): Record<string, JsonSchema | boolean> {
  return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, fieldToJsonSchema(v)]));
}

/** The whole request body as a JSON Schema 2020-12 document. */
export function bodyToJsonSchema(spec: BodySpec, title: string): JsonSchema {
  const doc: JsonSchema = {
    $schema: JSON_SCHEMA_DIALECT,
    title,
    type: 'object',
    additionalProperties: spec.additionalProperties,
    required: [...spec.required],
    properties: mapProps(spec.properties),
  };
  // `properties: {f: true}` beside `required` keeps Ajv's strictRequired happy inside applicators
  const req = (fields: readonly string[]) => ({ properties: Object.fromEntries(fields.map((f) => [f, true])), required: [...fields] });
  if (spec.anyOf?.length) doc.anyOf = spec.anyOf.map((f) => req([f]));
  const allOf: JsonSchema[] = [];
  if (spec.together?.length) {
    const dep: Record<string, string[]> = {};
    for (const g of spec.together) for (const f of g.fields) dep[f] = [...(dep[f] ?? []), ...g.fields.filter((o) => o !== f)];
    doc.dependentRequired = dep;
  }
  for (const c of spec.conflicts ?? []) {
    const pairs = c.a.flatMap((x) => c.b.map((y) => req([x, y])));
    allOf.push({ description: `${c.id}: ${c.message}`, not: { anyOf: pairs } });
  }
  if (allOf.length) doc.allOf = allOf;
  return doc;
}
