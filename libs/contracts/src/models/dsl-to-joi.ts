import Joi from 'joi';
import { caseInsensitivePattern, codePointLength, type BodySpec, type FieldSpec } from './field-dsl';

const re = (p: string) => new RegExp(p, 'u');

/** One field of the DSL as a Joi schema. Types are never converted (a string "6" is not a number). */
export function fieldToJoi(f: FieldSpec): Joi.Schema {
  switch (f.type) {
    case 'forbidden':
      return Joi.any().forbidden();
    case 'boolean':
      return Joi.boolean();
    case 'integer':
    case 'number': {
      // unsafe(): JSON Schema accepts any JSON number, Joi would refuse those beyond 2^53 by default
      let s = Joi.number().unsafe();
      if (f.type === 'integer') s = s.integer();
      if (f.minimum !== undefined) s = s.min(f.minimum);
      if (f.maximum !== undefined) s = s.max(f.maximum);
      if (f.enum) return s.valid(...f.enum);
      return s;
    }
    case 'string': {
      // Joi refuses '' unless allowed, and an allowed value skips every other rule: allow it only when no rule could refuse it
      const emptyOk = !f.minLength && !f.pattern && !f.enum;
      let s = emptyOk ? Joi.string().allow('') : Joi.string();
      if (f.enum && f.orPattern) {
        const values = new Set(f.enum);
        const alt = re(f.orPattern);
        s = s.custom((v: string, h) => (values.has(v) || alt.test(v) ? v : h.error('any.only')));
      } else if (f.enum && f.caseInsensitive) s = s.pattern(re(caseInsensitivePattern(f.enum)));
      else if (f.enum) return Joi.string().valid(...f.enum);
      if (f.pattern) s = s.pattern(re(f.pattern));
      const { minLength: min, maxLength: max } = f;
      if (min !== undefined || max !== undefined) {
        s = s.custom((v: string, h) => {
          const n = codePointLength(v);
          if (min !== undefined && n < min) return h.error('string.min', { limit: min });
          if (max !== undefined && n > max) return h.error('string.max', { limit: max });
          return v;
        });
      }
      return s;
    }
    case 'array': {
      let s = Joi.array().items(fieldToJoi(f.items));
      if (f.minItems !== undefined) s = s.min(f.minItems);
      if (f.maxItems !== undefined) s = s.max(f.maxItems);
      const counts = f.counts;
      if (counts) s = s.custom((v: unknown[], h) => (counts.includes(v.length) ? v : h.error('array.length', { limit: counts.join(', ') })));
      return s;
    }
    case 'object': {
      const keys = Object.fromEntries(Object.entries(f.properties).map(([k, v]) => [k, f.required?.includes(k) ? fieldToJoi(v).required() : fieldToJoi(v)]));
      return Joi.object(keys).unknown(f.additionalProperties);
    }
  }
}

/** The whole body as a Joi object schema (object-level rules map to and / or / nand). */
export function bodyToJoi(spec: BodySpec): Joi.ObjectSchema {
  const keys = Object.fromEntries(Object.entries(spec.properties).map(([k, v]) => [k, spec.required.includes(k) ? fieldToJoi(v).required() : fieldToJoi(v)]));
  let s = Joi.object(keys).unknown(spec.additionalProperties);
  if (spec.anyOf?.length) s = s.or(...spec.anyOf);
  for (const g of spec.together ?? []) s = s.and(...g.fields);
  for (const c of spec.conflicts ?? []) for (const x of c.a) for (const y of c.b) s = s.nand(x, y);
  return s;
}

export const JOI_OPTIONS: Joi.ValidationOptions = Object.freeze({
  convert: false,
  abortEarly: true,
  noDefaults: true,
  errors: { render: false },
});
