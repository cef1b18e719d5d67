import type { ArrayField, MediaKind, StringField } from './field-dsl';
import type { BillingItem } from './types';

/** `parameters.schema_version` of every contract in this release (later versions only add fields). */
export const SCHEMA_VERSION = '2025-06-01';

export const IMAGE_ENDPOINT = '/v1/images/generations';
export const VIDEO_ENDPOINT = '/v1/videos/generations';

/** A public http(s) URL, checked in the schema by pattern and at the edge for internal addresses. */
export const URL_PATTERN = '^[hH][tT][tT][pP][sS]?://';

export const modelField = (names: readonly string[]): StringField => ({
  type: 'string',
  enum: names,
  description: names.length > 1 ? `one of ${names.join(', ')} (interchangeable)` : `must be ${names[0]}`,
});

export const promptField = (opts: { maxLength?: number; nonBlank?: boolean; description?: string } = {}): StringField => ({
  type: 'string',
  minLength: 1,
  ...(opts.maxLength !== undefined ? { maxLength: opts.maxLength } : {}),
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
