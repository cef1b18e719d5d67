import type { ArrayField, BodySpec, FieldSpec, MediaKind, StringField } from './field-dsl';
import type { BillingItem } from './types';

/** `parameters.schema_version` of every contract in this release (later versions only add fields). */
export const SCHEMA_VERSION = '2025-06-01';

/** Upstream poll cadences (ms). Models the spec gives a cadence for (pixel-v6, Omni-Flash-Ext) say so themselves. */
export const POLL = Object.freeze({
  image: { min: 2000, max: 5000 },
  videoQuick: { min: 3000, max: 8000 },
  video: { min: 5000, max: 10000 },
});

export const IMAGE_ENDPOINT = '/v1/images/generations';
export const VIDEO_ENDPOINT = '/v1/videos/generations';
/** The private avatar submit path (spec 4.8): the edge serves it, an upstream gateway is called on it. */
export const AVATAR_ENDPOINT = '/v1/motion2/private-avatar';

/** A public http(s) URL, checked in the schema by pattern and at the edge for internal addresses. */
export const URL_PATTERN = '^[hH][tT][tT][pP][sS]?://';

export const modelField = (names: readonly string[]): StringField => ({
  type: 'string',
  enum: names,
  description: names.length > 1 ? `one of ${names.join(', ')} (interchangeable)` : `must be ${names[0]}`,
});

/**
 * The prompt cap of a model the spec gives none for: pixel-v6's 5000 code points, the middle of the caps the spec
 * names (2000 clipq3, 5000 pixel-v6, 8000 spark-imagine-image-2.0).
 */
export const DEFAULT_PROMPT_MAX_LENGTH = 5000;

export const promptField = (opts: { maxLength?: number; nonBlank?: boolean; description?: string } = {}): StringField => ({
  type: 'string',
  minLength: 1,
  maxLength: opts.maxLength ?? DEFAULT_PROMPT_MAX_LENGTH,
  ...(opts.nonBlank ? { pattern: '\\S', patternLabel: 'non-empty after trimming (not only whitespace)' } : {}),
  description: opts.description ?? 'what to generate',
});

export const mediaString = (kind: MediaKind, description?: string): StringField =>
  kind === 'url'
    ? { type: 'string', media: 'url', pattern: URL_PATTERN, patternLabel: 'a public http(s) URL', description: description ?? 'public http(s) URL' }
    : { type: 'string', media: 'url-or-base64', minLength: 1, description: description ?? 'public http(s) URL, data URI or Base64' };

export const mediaArray = (kind: MediaKind, opts: { minItems?: number; maxItems?: number; description?: string } = {}): ArrayField => ({
  type: 'array',
  items: mediaString(kind),
  ...(opts.minItems !== undefined ? { minItems: opts.minItems } : {}),
  ...(opts.maxItems !== undefined ? { maxItems: opts.maxItems } : {}),
  ...(opts.description ? { description: opts.description } : {}),
});

/** Price keys from most to least specific: `model@a-b`, `model@a`, `model`. */
export function billingKeys(model: string, ...qualifiers: string[]): string[] {
  const keys: string[] = [];
  for (let i = qualifiers.length; i > 0; i--) keys.push(`${model}@${qualifiers.slice(0, i).join('-')}`);
  keys.push(model);
  return keys;
}

export const imageItem = (model: string, tier: string, count: number): BillingItem => ({
  keys: billingKeys(model, tier),
  quantity: count,
  label: `${count} image(s) at ${tier}`,
});

export const videoSecondsItem = (model: string, tier: string, seconds: number): BillingItem => ({
  keys: billingKeys(model, tier),
  quantity: seconds,
  label: `${seconds} s of video at ${tier}`,
});

export const audioSurchargeItem = (model: string, tier: string, seconds: number): BillingItem => ({
  keys: [`${model}@audio-${tier}`, `${model}@audio`],
  quantity: seconds,
  label: `audio for ${seconds} s`,
});

export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Output size of a video from its `<N>p` / `4k` resolution and a `W:H` ratio (the short side is N). */
export function videoDims(resolution: string, ratio: string): { width: number; height: number } | undefined {
  const r = resolution.toLowerCase();
  const short = r === '4k' ? 2160 : /^\d+p$/.test(r) ? parseInt(r, 10) : NaN;
  const m = /^(\d+(?:\.\d+)?):(\d+(?:\.\d+)?)$/.exec(ratio);
  if (!m || Number.isNaN(short)) return undefined;
  const [w, h] = [Number(m[1]), Number(m[2])];
  const long = Math.round((short * Math.max(w, h)) / Math.min(w, h) / 2) * 2;
  return w >= h ? { width: long, height: short } : { width: short, height: long };
}

/** Output size of an image whose long side is `longSide`, for a `W:H` ratio (sides rounded to 16). */
export function imageDims(longSide: number, ratio: string): { width: number; height: number } | undefined {
  const m = /^(\d+(?:\.\d+)?):(\d+(?:\.\d+)?)$/.exec(ratio);
  if (!m) return undefined;
  const [w, h] = [Number(m[1]), Number(m[2])];
  const short = Math.max(16, Math.round((longSide * Math.min(w, h)) / Math.max(w, h) / 16) * 16);
  return w >= h ? { width: longSide, height: short } : { width: short, height: longSide };
}

export interface VideoNormalizeInput {
  model: string;
  /** Price tier qualifier, e.g. `720p` or `pro`. */
  tier: string;
  seconds: number;
  audio?: boolean;
  mode: string;
  dims?: { width: number; height: number };
  extraDerived?: Record<string, unknown>;
}

export function videoResult(v: VideoNormalizeInput) {
  const billing = [videoSecondsItem(v.model, v.tier, v.seconds)];
  if (v.audio) billing.push(audioSurchargeItem(v.model, v.tier, v.seconds));
  return {
    derived: {
      mode: v.mode,
      tier: v.tier,
      durationSeconds: v.seconds,
      ...(v.audio !== undefined ? { audio: v.audio } : {}),
      ...(v.dims ?? {}),
      ...v.extraDerived,
    },
    billing,
    expected: { kind: 'videos' as const, count: 1, format: 'mp4', durationSeconds: v.seconds, ...(v.dims ?? {}) },
  };
}

/** What every video contract shares: its operation, endpoint, schema version, pool and acknowledgement. */
export const VIDEO_COMMON = {
  operation: 'video_generation' as const,
  endpoint: VIDEO_ENDPOINT,
  schemaVersion: SCHEMA_VERSION,
  pool: 'video' as const,
  ack: 'A' as const,
  refuseForeignMedia: true,
};

const KIB = 1024;
const MIB = 1024 * KIB;

/**
 * Total request-body caps (bytes as sent), by how much inline media (Base64 / data URIs) a contract accepts. Every
 * contract gets one (define-contract.ts); the edge refuses a larger body with 413 before parsing it, and the route's
 * cap is the largest of the contracts it serves.
 */
export const BODY_CAPS = Object.freeze({
  /** URLs only: text fields (a prompt of 8000 code points is at most 32 KiB in UTF-8) and pass-through fields. */
  urlsOnly: 256 * KIB,
  /** One inline image: 10 MiB (spec 4.7.4, the upload limit) is 13.4 MiB in Base64. */
  oneInline: 16 * MIB,
  /** Several inline images (lumen-2: 8, pict-image-2: 16): one budget for all of them together. */
  manyInline: 24 * MIB,
});

/** How many inline media values a body may carry (Infinity for an unbounded list). */
function inlineSlots(f: FieldSpec): number {
  if (f.type === 'string') return f.media === 'url-or-base64' ? 1 : 0;
  if (f.type === 'array') {
    const each = inlineSlots(f.items);
    return each === 0 ? 0 : each * (f.maxItems ?? Infinity);
  }
  if (f.type === 'object') return Object.values(f.properties).reduce((n, p) => n + inlineSlots(p), 0);
  return 0;
}

/** The body cap a contract gets from its fields (see BODY_CAPS). */
export function bodyCapOf(spec: BodySpec): number {
  const slots = Object.values(spec.properties).reduce((n, f) => n + inlineSlots(f), 0);
  return slots === 0 ? BODY_CAPS.urlsOnly : slots === 1 ? BODY_CAPS.oneInline : BODY_CAPS.manyInline;
}
