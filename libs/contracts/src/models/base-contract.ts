import { defineContract, type BuiltContract } from './define-contract';
import { AVATAR_ENDPOINT, IMAGE_ENDPOINT, SCHEMA_VERSION, VIDEO_ENDPOINT, mediaArray, modelField, promptField, POLL } from './common-fields';
import { resolveModel } from './registry';
import type { NormalizedRequest, Operation } from './types';

export { AVATAR_ENDPOINT };

/**
 * The generic contract of a model without catalog metadata (spec 2.4 `category=unknown`: a non-standard name in a
 * key whitelist, still callable). Only `model` and a non-empty `prompt` are checked; every other field passes
 * upstream untouched. Media URLs in `image_urls` / `video_urls` still get the public-address check, since the
 * upstream fetches them on our behalf.
 */

const BY_OPERATION = {
  image_generation: {
    endpoint: IMAGE_ENDPOINT,
    pool: 'image',
    kind: 'images',
    unit: 'image',
    pollIntervalMs: POLL.image,
    estimatedSeconds: 60,
  },
  video_generation: {
    endpoint: VIDEO_ENDPOINT,
    pool: 'video',
    kind: 'videos',
    unit: 'video',
    pollIntervalMs: POLL.video,
    estimatedSeconds: 300,
  },
} as const;

function buildBaseContract(model: string, operation: Operation): BuiltContract {
  const op = BY_OPERATION[operation];
  const built = defineContract({
    model,
    family: 'base',
    operation,
    endpoint: op.endpoint,
    schemaVersion: SCHEMA_VERSION,
    ack: 'A',
    pool: op.pool,
    pollIntervalMs: op.pollIntervalMs,
    estimatedSeconds: op.estimatedSeconds,
    body: {
      properties: {
        model: modelField([model]),
        prompt: promptField(),
        image_urls: mediaArray('url-or-base64', { description: 'reference images (public URLs, data URIs or Base64)' }),
        ...(operation === 'video_generation' ? { video_urls: mediaArray('url', { description: 'reference videos (public URLs)' }) } : {}),
      },
      required: ['model', 'prompt'],
      additionalProperties: true,
    },
    normalize(_body, _ctx, raw) {
      return {
        derived: { mode: 'base' },
        // operators price a custom name with PUT /api/prices; unpriced, the submit answers 503 "model not priced"
        billing: [{ keys: [`${model}@${op.unit}`, model], quantity: 1, label: `1 ${op.unit}` }],
        expected: { kind: op.kind, count: 1 },
        upstreamBody: { ...raw },
      };
    },
  });
  return Object.freeze({ ...built, source: 'base' });
}

// Names come only from key whitelists (checked before a contract is built), so the cache stays small; the cap
// only guards against an operator listing thousands of names.
const CACHE_LIMIT = 1000;
const cache = new Map<string, BuiltContract>();

/** The generic base contract for `model` (source `base`): requires `model` and `prompt`, tolerates anything else. */
export function baseContract(model: string, operation: Operation): BuiltContract {
  const key = `${operation}\u0000${model}`;
  let c = cache.get(key);
  if (!c) {
    if (cache.size >= CACHE_LIMIT) cache.clear();
    c = buildBaseContract(model, operation);
    cache.set(key, c);
  }
  return c;
}

/**
 * The upstream path a request is submitted to (before a per-request `upstreamPath`): its model's contract endpoint,
 * else the base contract's endpoint of its pool (a custom model name), else the avatar path. The one endpoint table.
 */
export function contractEndpointOf(req: Pick<NormalizedRequest, 'model' | 'pool'>): string | undefined {
  const own = resolveModel(req.model)?.contract?.endpoint;
  if (own) return own;
  if (req.pool === 'avatar') return AVATAR_ENDPOINT;
  return Object.values(BY_OPERATION).find((op) => op.pool === req.pool)?.endpoint;
}
