import type Joi from 'joi';
import type { ContractViolation } from './types';
import type { ErrorType } from '../error-types';
import type { BodySpec, FieldSpec } from './field-dsl';

/** Short, readable rendering of a client value inside a message. */
export function show(v: unknown): string {
  if (typeof v === 'string') return `'${v.length > 60 ? `${v.slice(0, 57)}...` : v}'`;
  if (v === undefined) return 'nothing';
  let json: string;
  try {
    json = JSON.stringify(v) ?? typeof v; // undefined only for a function or a symbol, never in parsed JSON
  } catch {
    // nested deeper than the stack allows (a hostile body): a 400 must still be answered, not a 500
    return Array.isArray(v) ? 'a deeply nested array' : 'a deeply nested object';
  }
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
}

const typeName = (f: FieldSpec): string => {
  switch (f.type) {
    case 'integer':
      return 'an integer (a JSON number, not a string)';
    case 'number':
      return 'a number (a JSON number, not a string)';
    case 'boolean':
      return 'a boolean (true or false, not a string)';
    case 'array':
      return 'an array';
    case 'object':
      return 'an object';
    default:
      return 'a string';
  }
};

function fieldAt(spec: BodySpec, path: readonly (string | number)[]): FieldSpec | undefined {
  let props: Readonly<Record<string, FieldSpec>> | undefined = spec.properties;
  let cur: FieldSpec | undefined;
  for (const seg of path) {
    if (typeof seg === 'number') {
      if (cur?.type !== 'array') return undefined;
      cur = cur.items;
    } else {
      cur = props?.[seg];
    }
    props = cur?.type === 'object' ? cur.properties : undefined;
  }
  return cur;
}

const RULES: Record<string, string> = {
  'any.required': 'required',
  'any.only': 'enum',
  'any.unknown': 'forbidden',
  'object.unknown': 'unknown',
  'number.integer': 'type',
  'number.min': 'min',
  'number.max': 'max',
  'string.min': 'minLength',
  'string.max': 'maxLength',
  'string.pattern.base': 'pattern',
  'array.min': 'minItems',
  'array.max': 'maxItems',
  'array.length': 'count',
  'object.missing': 'any-of',
  'object.and': 'together',
  'object.nand': 'conflict',
};

function fieldMessage(name: string, f: FieldSpec | undefined, rule: string, d: Joi.ValidationErrorItem): string {
  const got = `got ${show(d.context?.value)}`;
  if (!f) return `\`${name}\` is invalid (${d.type}); ${got}`;
  if (f.type === 'forbidden') return f.message;
  const limit = d.context?.limit as number | string | undefined;
  switch (rule) {
    case 'required':
      return `\`${name}\` is required`;
    case 'type':
      return `\`${name}\` must be ${typeName(f)}; ${got}`;
    case 'enum': {
      if (f.type === 'string' && f.enumLabel) return `\`${name}\` must be one of ${f.enumLabel}; ${got}`;
      const values = (f.type === 'string' || f.type === 'integer' || f.type === 'number') && f.enum ? f.enum.join(', ') : '';
      const alt = f.type === 'string' && f.orPattern ? ` or ${f.orPatternLabel ?? `a value matching ${f.orPattern}`}` : '';
      return `\`${name}\` must be one of ${values}${alt}; ${got}`;
    }
    case 'pattern': {
      if (f.type === 'string' && f.enum && f.caseInsensitive) return `\`${name}\` must be one of ${f.enum.join(', ')} (any case); ${got}`;
      const label = f.type === 'string' ? (f.patternLabel ?? `match ${f.pattern}`) : 'match its pattern';
      return `\`${name}\` must be ${label}; ${got}`;
    }
    case 'min':
    case 'max': {
      const n = f.type === 'integer' || f.type === 'number' ? f : undefined;
      if (n?.minimum !== undefined && n.minimum === n.maximum) return `\`${name}\` must be ${n.minimum}; ${got}`;
      if (n?.minimum !== undefined && n.maximum !== undefined) return `\`${name}\` must be between ${n.minimum} and ${n.maximum}; ${got}`;
      return `\`${name}\` must be ${rule === 'min' ? 'at least' : 'at most'} ${limit}; ${got}`;
    }
    case 'minLength':
      return limit === 1 || limit === undefined ? `\`${name}\` must not be empty` : `\`${name}\` must be at least ${limit} characters long`;
    case 'maxLength':
      return `\`${name}\` must be at most ${limit} characters long; got ${[...String(d.context?.value ?? '')].length}`;
    case 'minItems':
      return `\`${name}\` must have at least ${limit} item(s); got ${(d.context?.value as unknown[] | undefined)?.length ?? 'fewer'}`;
    case 'maxItems':
      return `\`${name}\` must have at most ${limit} item(s); got ${(d.context?.value as unknown[] | undefined)?.length ?? 'more'}`;
    case 'count':
      return `\`${name}\` must have ${limit} item(s); got ${(d.context?.value as unknown[] | undefined)?.length}`;
    case 'unknown':
      return `\`${name}\` is not a recognized field here; remove it`;
    default:
      return `\`${name}\` is invalid (${d.type}); ${got}`;
  }
}

/** Turns the first Joi error into a violation naming the field and the rule. */
export function joiToViolation(spec: BodySpec, err: Joi.ValidationError): ContractViolation {
  const d = err.details[0]!;
  const path = d.path;
  const field = path.join('.');
  let rule = RULES[d.type] ?? (d.type.endsWith('.base') ? 'type' : d.type);
  const status: 400 | 422 = 400;
  let type: ErrorType = 'invalid_request_error';
  let message: string;

  if (rule === 'any-of') {
    message = spec.anyOfMessage ?? `the body must contain at least one of: ${spec.anyOf?.map((f) => `\`${f}\``).join(', ')}`;
    return { status, type, field: '', rule, message };
  }
  if (rule === 'together') {
    const present = (d.context?.present as string[] | undefined) ?? [];
    const g = spec.together?.find((t) => present.some((p) => t.fields.includes(p)));
    const missing = (d.context?.missing as string[] | undefined) ?? [];
    return { status, type: g?.type ?? type, field: missing[0] ?? '', rule, message: g?.message ?? `${missing.join(', ')} must be given too` };
  }
  if (rule === 'conflict') {
    const main = d.context?.main as string;
    const peers = (d.context?.peers as string[] | undefined) ?? [];
    const c = spec.conflicts?.find(
      (r) => (r.a.includes(main) && peers.some((p) => r.b.includes(p))) || (r.b.includes(main) && peers.some((p) => r.a.includes(p))),
    );
    return {
      status: c?.status ?? 400,
      type: c?.type ?? type,
      field: main,
      rule: c ? `conflict:${c.id}` : rule,
      message: c ? `${c.message} (got both \`${main}\` and \`${peers.join('`, `')}\`)` : `\`${main}\` cannot be combined with ${peers.join(', ')}`,
    };
  }
  if (field === '' && rule === 'type') {
    return { status, type, field, rule, message: 'the request body must be a JSON object' };
  }

  const f = fieldAt(spec, path);
  if (d.type === 'string.empty')
    rule = f?.type === 'string' && f.minLength ? 'minLength' : f?.type === 'string' && (f.enum || f.orPattern) ? 'enum' : 'pattern';
  message = fieldMessage(field, f, rule, d);
  // a field's own error type applies to violations on the field itself, not inside its items
  const top = path.length === 1 ? spec.properties[String(path[0])] : undefined;
  if (top && top.type !== 'forbidden' && top.errorType && (!top.errorTypeRules || top.errorTypeRules.includes(rule))) type = top.errorType;
  if (f && f.type !== 'forbidden' && f.hint && rule !== 'required') message = `${message}. ${f.hint}`;
  return { status, type, field, rule, message };
}
