import type Joi from 'joi';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import type { Pool } from '../queues';
import type { ErrorType } from '../error-types';
import { isBareBase64, isDataUri, mediaUrlProblem } from '../media-url';
import type {
  AckShape,
  BillingItem,
  ContractViolation,
  ExpectedOutput,
  MediaUrlRef,
  ModelContract,
  Operation,
  ValidateOptions,
  ValidationOutcome,
} from './types';
import type { BodySpec, FieldSpec, MediaKind } from './field-dsl';
import { bodyToJoi, JOI_OPTIONS } from './dsl-to-joi';
import { bodyToJsonSchema } from './dsl-to-json-schema';
import { joiToViolation } from './violation';
import { bodyCapOf } from './common-fields';

export type Body = Record<string, unknown>;

export interface RuleContext {
  /** Canonical model id. */
  model: string;
  requestedModel: string;
  trustedUrlPrefixes: readonly string[];
  /** Sizes of URL references the caller measured (ValidateOptions.referenceSizes). */
  referenceSizes?: ReadonlyMap<string, { width: number; height: number }>;
}

export interface RuleProblem {
  field: string;
  message: string;
  status?: 400 | 422;
  type?: ErrorType;
}

/** A rule JSON Schema cannot express: enforced only here, listed in `serverRules` and docs/models.md. */
export interface ServerRule {
  id: string;
  description: string;
  check(body: Body, ctx: RuleContext): RuleProblem | undefined;
}

export interface NormalizeResult {
  derived: Record<string, unknown>;
  billing: BillingItem[];
  expected: ExpectedOutput;
  /** Defaults to the body with defaults filled in and `model` set to the canonical id. */
  upstreamBody?: Body;
  /** Upstream path when it differs per request (art suite: one path per action); see NormalizedRequest.upstreamPath. */
  upstreamPath?: string;
}

export interface ContractDefinition {
  model: string;
  family: string;
  operation: Operation;
  endpoint: string;
  schemaVersion: string;
  ack: AckShape;
  pool: Pool;
  pollIntervalMs: { min: number; max: number };
  estimatedSeconds: number;
  body: BodySpec;
  serverRules?: readonly ServerRule[];
  /** The total-body cap when the one its fields give (bodyCapOf) does not fit. */
  maxBodyBytes?: number;
  /**
   * Refuse (400) the spec's media reference names (REFERENCE_FIELDS) this contract does not list, instead of passing
   * them on as extras: a frame or reference the model ignores silently runs another mode (issue 27). Set for every
   * named video model (VIDEO_COMMON); custom names pass everything on.
   */
  refuseForeignMedia?: boolean;
  /** Receives the validated body with defaults filled in (and the body as sent). */
  normalize(body: Body, ctx: RuleContext, raw: Body): NormalizeResult;
}

/** A contract plus what tests and docs need beyond the public ModelContract. */
export interface BuiltContract extends ModelContract {
  readonly bodySpec: BodySpec;
  readonly joiSchema: Joi.ObjectSchema;
}

interface MediaValue {
  field: string;
  value: string;
  kind: MediaKind;
}

/**
 * The fields of `props` that can hold media, listed once per properties object: collectMedia runs up to three
 * times per submit and visits only these (no entries array of every field each time).
 */
const mediaFieldsCache = new WeakMap<object, ReadonlyArray<readonly [string, FieldSpec]>>();
function mediaFields(props: Readonly<Record<string, FieldSpec>>): ReadonlyArray<readonly [string, FieldSpec]> {
  let fields = mediaFieldsCache.get(props);
  if (!fields) {
    fields = Object.entries(props).filter(([, f]) => canHoldMedia(f));
    mediaFieldsCache.set(props, fields);
  }
  return fields;
}

function collectMedia(props: Readonly<Record<string, FieldSpec>>, body: Body, prefix: string, out: MediaValue[]): void {
  for (const [key, f] of mediaFields(props)) {
    const v = body[key];
    if (v === undefined) continue;
    visit(f, v, `${prefix}${key}`, out);
  }
}

function visit(f: FieldSpec, v: unknown, field: string, out: MediaValue[]): void {
  if (f.type === 'string' && f.media && typeof v === 'string') out.push({ field, value: v, kind: f.media });
  else if (f.type === 'array' && Array.isArray(v)) v.forEach((item, i) => visit(f.items, item, `${field}.${i}`, out));
  else if (f.type === 'object' && v && typeof v === 'object' && !Array.isArray(v)) collectMedia(f.properties, v as Body, `${field}.`, out);
}

export const MEDIA_RULE_ID = 'media-url';

function mediaRule(spec: BodySpec): ServerRule {
  return {
    id: MEDIA_RULE_ID,
    description:
      'Every media URL must be a public http(s) address: loopback, private, link-local, CGNAT and metadata addresses and internal host names are refused; Base64 / data URIs only where the field allows them.',
    check(body, ctx) {
      const media: MediaValue[] = [];
      collectMedia(spec.properties, body, '', media);
      for (const m of media) {
        if (/^https?:\/\//i.test(m.value)) {
          const problem = mediaUrlProblem(m.value, { trustedPrefixes: ctx.trustedUrlPrefixes });
          if (problem) return { field: m.field, message: `\`${m.field}\` ${problem}` };
        } else if (m.kind === 'url-or-base64') {
          if (!isDataUri(m.value) && !isBareBase64(m.value)) {
            return { field: m.field, message: `\`${m.field}\` must be a public http(s) URL, a data URI or Base64 image data` };
          }
        } else {
          return { field: m.field, message: `\`${m.field}\` must be a public http(s) URL (Base64 and data URIs are not accepted by ${ctx.model})` };
        }
      }
      return undefined;
    },
  };
}

/** The http(s) media URLs of a valid body that are not the gateway's own links (resolved by the edge at submit). */
function externalMediaUrls(spec: BodySpec, body: Body, trusted: readonly string[]): MediaUrlRef[] {
  const media: MediaValue[] = [];
  collectMedia(spec.properties, body, '', media);
  return media
    .filter((m) => /^https?:\/\//i.test(m.value) && !trusted.some((p) => p.length > 0 && new URL(m.value).href.startsWith(p)))
    .map((m) => ({ field: m.field, url: m.value }));
}

function canHoldMedia(f: FieldSpec): boolean {
  return (
    (f.type === 'string' && !!f.media) ||
    (f.type === 'array' && canHoldMedia(f.items)) ||
    (f.type === 'object' && Object.values(f.properties).some(canHoldMedia))
  );
}

function hasMedia(props: Readonly<Record<string, FieldSpec>>): boolean {
  return Object.values(props).some(canHoldMedia);
}

/** The defaults of a body's fields, listed once per contract (applied on every submit). */
function defaultsOf(props: Readonly<Record<string, FieldSpec>>): ReadonlyArray<readonly [string, unknown]> {
  return Object.entries(props).flatMap(([k, f]) => (f.type !== 'forbidden' && f.default !== undefined ? [[k, f.default] as const] : []));
}

/**
 * The body's own fields, then its defaults where a field is missing. Not `{ ...body }` and then adding: on Node 20
 * (V8 11.3) each property added to an object made by a leading spread costs about a microsecond (measured: 1.8 µs
 * for three defaults, 0.2 µs this way; docs/benchmarks.md). A body's `__proto__` key stays an own field.
 */
function applyDefaults(defaults: ReadonlyArray<readonly [string, unknown]>, body: Body): Body {
  const out: Body = {};
  for (const k of Object.keys(body)) {
    if (k === '__proto__') Object.defineProperty(out, k, { value: body[k], enumerable: true, writable: true, configurable: true });
    else out[k] = body[k];
  }
  for (const [k, v] of defaults) if (out[k] === undefined) out[k] = v;
  return out;
}

/** One Ajv for every contract; each published schema is compiled on its contract's first validation. */
let ajv: Ajv2020 | undefined;
function compileSchema(schema: object): ValidateFunction {
  ajv ??= new Ajv2020({ strict: true, allErrors: false });
  return ajv.compile(schema);
}

/** The names the spec and our contracts use for media a video is made from (frames, references, assets). */
export const REFERENCE_FIELDS = [
  'image_urls',
  'first_frame_image',
  'last_frame_image',
  'image_with_roles',
  'video_urls',
  'reference_image_urls',
  'reference_video_urls',
  'reference_audio_urls',
  'asset_urls',
] as const;

/** The body with every reference name it does not list as a forbidden field naming what the model takes instead. */
function withForeignMediaRefused(model: string, body: BodySpec): BodySpec {
  const own = REFERENCE_FIELDS.filter((f) => f in body.properties);
  const takes = own.length ? `${model} takes media in ${own.map((f) => `\`${f}\``).join(', ')}` : `${model} takes no media references`;
  const foreign = REFERENCE_FIELDS.filter((f) => !(f in body.properties));
  if (!foreign.length) return body;
  const forbidden = Object.fromEntries(
    foreign.map((f) => [
      f,
      { type: 'forbidden' as const, message: `\`${f}\` is not a field of ${model}: it would be ignored and change what the request means; ${takes}` },
    ]),
  );
  return { ...body, properties: { ...body.properties, ...forbidden } };
}

/** Compiles one contract definition into a ModelContract (Joi validator + JSON Schema from the same spec). */
export function defineContract(input: ContractDefinition): BuiltContract {
  const def = input.refuseForeignMedia ? { ...input, body: withForeignMediaRefused(input.model, input.body) } : input;
  const joiSchema = bodyToJoi(def.body);
  const defaults = defaultsOf(def.body.properties);
  const inputSchema = bodyToJsonSchema(def.body, `${def.model} request body`);
  const rules: ServerRule[] = [...(hasMedia(def.body.properties) ? [mediaRule(def.body)] : []), ...(def.serverRules ?? [])];

  let schemaCheck: ValidateFunction | undefined;

  function validate(body: unknown, requestedModel: string, opts?: ValidateOptions): ValidationOutcome {
    // The published JSON Schema, compiled by Ajv, gives the verdict: it and Joi agree on every body
    // (schema-agreement.test.ts), and Ajv's compiled check costs a fraction of Joi's walk. Joi runs on a body the
    // schema refuses, to name the field and the rule of the error (and has the last word on it).
    schemaCheck ??= compileSchema(inputSchema);
    if (!schemaCheck(body)) {
      const { error } = joiSchema.validate(body, JOI_OPTIONS);
      if (error) return { ok: false, violation: joiToViolation(def.body, error) };
    }
    const raw = body as Body;
    const ctx: RuleContext = {
      model: def.model,
      requestedModel,
      trustedUrlPrefixes: opts?.trustedUrlPrefixes ?? [],
      ...(opts?.referenceSizes ? { referenceSizes: opts.referenceSizes } : {}),
    };
    for (const r of rules) {
      const p = r.check(raw, ctx);
      if (p) {
        const violation: ContractViolation = {
          status: p.status ?? 400,
          type: p.type ?? 'invalid_request_error',
          field: p.field,
          rule: `server:${r.id}`,
          message: p.message,
        };
        return { ok: false, violation };
      }
    }
    const withDefaults = applyDefaults(defaults, raw);
    const n = def.normalize(withDefaults, ctx, raw);
    return {
      ok: true,
      mediaUrls: externalMediaUrls(def.body, raw, ctx.trustedUrlPrefixes),
      value: {
        model: def.model,
        requestedModel,
        pool: def.pool,
        upstreamBody: n.upstreamBody ?? { ...withDefaults, model: def.model },
        derived: n.derived,
        billing: n.billing,
        expected: n.expected,
        ...(n.upstreamPath ? { upstreamPath: n.upstreamPath } : {}),
      },
    };
  }

  return Object.freeze({
    operation: def.operation,
    method: 'POST' as const,
    endpoint: def.endpoint,
    schemaVersion: def.schemaVersion,
    source: `model:${def.family}`,
    ack: def.ack,
    pollIntervalMs: def.pollIntervalMs,
    estimatedSeconds: def.estimatedSeconds,
    inputSchema,
    serverRules: rules.map(({ id, description }) => ({ id, description })),
    maxBodyBytes: def.maxBodyBytes ?? bodyCapOf(def.body),
    inlineMedia: (body: Body) => {
      const media: MediaValue[] = [];
      collectMedia(def.body.properties, body, '', media);
      return media.filter((m) => m.kind === 'url-or-base64' && !/^https?:\/\//i.test(m.value)).map(({ field, value }) => ({ field, value }));
    },
    validate,
    bodySpec: def.body,
    joiSchema,
  });
}
