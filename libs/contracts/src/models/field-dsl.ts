import type { ErrorType } from '../error-types';

/**
 * The one definition of a request body. Both the Joi validator (dsl-to-joi.ts) and the published JSON Schema
 * (dsl-to-json-schema.ts) are compiled from it, so the two can never drift apart.
 */

/** Where a media field may point: public http(s) URLs only, or also Base64 / data URIs. */
export type MediaKind = 'url' | 'url-or-base64';

interface BaseField {
  description?: string;
  /** Filled in by normalization when the field is absent (published as `default`). */
  default?: unknown;
  /** Spec 7 error type for violations on this exact field (e.g. `invalid_duration`); default invalid_request_error. */
  errorType?: ErrorType;
  /** Limit `errorType` to these rule ids (default: every rule on this field). */
  errorTypeRules?: readonly string[];
  /** Appended to every message about this field: what to do instead. */
  hint?: string;
}

export interface StringField extends BaseField {
  type: 'string';
  enum?: readonly string[];
  /** Compare `enum` case-insensitively (compiled to a pattern, since JSON Schema enums are exact). */
  caseInsensitive?: boolean;
  /** Replaces the plain list of `enum` values in messages (e.g. to mention legacy aliases). */
  enumLabel?: string;
  /** A value must match this pattern (ECMAScript syntax, compiled with the `u` flag). */
  pattern?: string;
  /** What the pattern means, for messages: "a public http(s) URL". */
  patternLabel?: string;
  /** A value may match this pattern instead of being one of `enum` (e.g. lumen `size` pixel strings). */
  orPattern?: string;
  orPatternLabel?: string;
  /** Lengths count Unicode code points, as JSON Schema does. */
  minLength?: number;
  maxLength?: number;
  media?: MediaKind;
}

export interface NumberField extends BaseField {
  type: 'integer' | 'number';
  minimum?: number;
  maximum?: number;
  enum?: readonly number[];
}

export interface BooleanField extends BaseField {
  type: 'boolean';
}

export interface ArrayField extends BaseField {
  type: 'array';
  items: FieldSpec;
  minItems?: number;
  maxItems?: number;
  /** The only item counts allowed (e.g. Omni-Flash-Ext images: 0, 1 or 3). */
  counts?: readonly number[];
}

export interface ObjectField extends BaseField {
  type: 'object';
  properties: Readonly<Record<string, FieldSpec>>;
  required?: readonly string[];
  additionalProperties: boolean;
}

/** A field this model does not accept although a sibling model does (published as the `false` schema). */
export interface ForbiddenField {
  type: 'forbidden';
  /** Why, and what to do: "`steps` is only supported by lumen-2-flex". */
  message: string;
}

export type FieldSpec = StringField | NumberField | BooleanField | ArrayField | ObjectField | ForbiddenField;

/** Two groups of fields that must not be combined (one field of `a` together with one of `b`). */
export interface ConflictRule {
  id: string;
  a: readonly string[];
  b: readonly string[];
  status: 400 | 422;
  type?: ErrorType;
  message: string;
}

/** Object-level constraints JSON Schema can express. */
export interface BodySpec {
  properties: Readonly<Record<string, FieldSpec>>;
  required: readonly string[];
  /** At least one of these fields must be present. */
  anyOf?: readonly string[];
  anyOfMessage?: string;
  /** Each group: all or none of its fields. */
  together?: ReadonlyArray<{ fields: readonly string[]; message: string; type?: ErrorType }>;
  conflicts?: readonly ConflictRule[];
  /** Spec 2.4: true where extra fields are tolerated (passed upstream untouched). */
  additionalProperties: boolean;
}

/** Case-insensitive enum as a regex: `720p` → `^(?:720[pP])$`. */
export function caseInsensitivePattern(values: readonly string[]): string {
  const esc = (c: string) => (/[.*+?^${}()|[\]\\/]/.test(c) ? `\\${c}` : c);
  const alt = values.map((v) => [...v].map((c) => (c.toLowerCase() !== c.toUpperCase() ? `[${c.toLowerCase()}${c.toUpperCase()}]` : esc(c))).join(''));
  return `^(?:${alt.join('|')})$`;
}

/** Length in code points, the JSON Schema definition of string length. */
export const codePointLength = (s: string): number => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};
