import { defineContract, type Body, type BuiltContract } from './define-contract';
import { IMAGE_ENDPOINT, SCHEMA_VERSION, billingKeys, imageDims, imageItem, mediaArray, modelField, promptField, arr, POLL } from './common-fields';

const IMAGE_COMMON = {
  operation: 'image_generation' as const,
  endpoint: IMAGE_ENDPOINT,
  schemaVersion: SCHEMA_VERSION,
  pool: 'image' as const,
};

export const PICT_SIZES = ['1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3', '5:4', '4:5', '2:1', '1:2', '3:1', '1:3', '21:9', '9:21'] as const;
const PICT_LONG_SIDE: Record<string, number> = { '1k': 1024, '2k': 2048, '4k': 4096 };

/** pict-image-2 (alias pict-image-2-ext): 15 ratios, 1k/2k/4k billed by tier, up to 16 references. */
export function pictContract(): BuiltContract {
  const model = 'pict-image-2';
  return defineContract({
    ...IMAGE_COMMON,
    model,
    family: 'pict-image-2',
    ack: 'A',
    pollIntervalMs: POLL.image,
    estimatedSeconds: 30,
    body: {
      properties: {
        model: modelField([model, 'pict-image-2-ext']),
        prompt: promptField(),
        n: { type: 'integer', minimum: 1, maximum: 4, default: 1, description: 'number of images (1..4)' },
        size: { type: 'string', enum: PICT_SIZES, default: '1:1', description: 'aspect ratio' },
        resolution: { type: 'string', enum: ['1k', '2k', '4k'], default: '1k', description: 'output tier, billed by tier' },
        image_urls: mediaArray('url-or-base64', { maxItems: 16, description: 'reference images (URL and Base64 mixable), at most 16' }),
      },
      required: ['model', 'prompt'],
      additionalProperties: true,
    },
    normalize(body) {
      const n = body.n as number;
      const tier = body.resolution as string;
      const dims = imageDims(PICT_LONG_SIDE[tier]!, body.size as string)!;
      return {
        derived: { mode: arr(body.image_urls).length ? 'image-to-image' : 'text-to-image', tier, ...dims },
        billing: [imageItem(model, tier, n)],
        expected: { kind: 'images', count: n, ...dims, format: 'png' },
      };
    },
  });
}

const SPARK_RATIOS = ['1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3'] as const;

/** spark-imagine-1.5-main and the models its endpoint also covers (fields beyond the sample are our choice). */
export function sparkImagineContract(model: 'spark-imagine-1.5-main' | 'spark-imagine-image' | 'spark-imagine-image-quality'): BuiltContract {
  const names = model === 'spark-imagine-1.5-main' ? [model, 'spark-imagine-1.5-ext'] : [model];
  return defineContract({
    ...IMAGE_COMMON,
    model,
    family: 'spark-imagine-1.5',
    ack: 'A',
    pollIntervalMs: POLL.image,
    estimatedSeconds: model === 'spark-imagine-image-quality' ? 40 : 20,
    body: {
      properties: {
        model: modelField(names),
        prompt: promptField(),
        size: { type: 'string', enum: SPARK_RATIOS, default: '1:1', description: 'aspect ratio' },
        n: { type: 'integer', minimum: 1, maximum: 4, default: 1, description: 'number of images (1..4)' },
        image_urls: mediaArray('url', { minItems: 1, maxItems: 4, description: 'reference images to edit (public URLs), at most 4' }),
      },
      required: ['model', 'prompt'],
      additionalProperties: true,
    },
    normalize(body) {
      const n = body.n as number;
      const dims = imageDims(1024, body.size as string)!;
      return {
        derived: { mode: arr(body.image_urls).length ? 'image-edit' : 'text-to-image', tier: 'standard', ...dims, linkTtlSeconds: 86400 },
        billing: [imageItem(model, 'standard', n)],
        expected: { kind: 'images', count: n, ...dims, format: 'png' },
      };
    },
  });
}

const DREAM_LONG_SIDE: Record<string, number> = { '1k': 1024, '2k': 2048, '4k': 4096 };

/** dream-5-0-pro / -lite: ratio, 1K/2K/4K (any case); only lite makes several images per task. */
export function dreamContract(model: 'dream-5-0-pro' | 'dream-5-0-lite'): BuiltContract {
  const lite = model === 'dream-5-0-lite';
  return defineContract({
    ...IMAGE_COMMON,
    model,
    family: 'dream-5-0',
    ack: 'A',
    pollIntervalMs: POLL.image,
    estimatedSeconds: lite ? 15 : 30,
    body: {
      properties: {
        model: modelField([model]),
        prompt: promptField(),
        size: { type: 'string', enum: ['1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3', '21:9'], default: '1:1', description: 'aspect ratio' },
        resolution: { type: 'string', enum: ['1K', '2K', '4K'], caseInsensitive: true, default: '2K', description: 'output tier' },
        n: lite
          ? { type: 'integer', minimum: 1, maximum: 4, default: 1, description: 'number of images (1..4)' }
          : { type: 'integer', minimum: 1, maximum: 1, default: 1, hint: 'dream-5-0-pro makes one image per task; use dream-5-0-lite or several tasks' },
        image_urls: mediaArray('url', { minItems: 1, maxItems: 10, description: 'reference images (public URLs), at most 10' }),
      },
      required: ['model', 'prompt'],
      additionalProperties: true,
    },
    normalize(body) {
      const n = body.n as number;
      const tier = (body.resolution as string).toUpperCase();
      const dims = imageDims(DREAM_LONG_SIDE[tier.toLowerCase()]!, body.size as string)!;
      return {
        derived: { mode: arr(body.image_urls).length ? 'image-to-image' : 'text-to-image', tier, ...dims },
        billing: [imageItem(model, tier, n)],
        expected: { kind: 'images', count: n, ...dims, format: 'jpeg' },
        upstreamBody: { ...body, model, resolution: tier },
      };
    },
  });
}

export const SPARK2_RATIOS = ['1:1', '3:4', '4:3', '9:16', '16:9', '2:3', '3:2', '9:19.5', '19.5:9', '9:20', '20:9', '1:2', '2:1', 'auto'] as const;

/** spark-imagine-image-2.0: shape B (202), trimmed prompt <= 8000, quality only for text-to-image. */
export function sparkImage2Contract(): BuiltContract {
  const model = 'spark-imagine-image-2.0';
  return defineContract({
    ...IMAGE_COMMON,
    model,
    family: 'spark-imagine-image-2.0',
    ack: 'B',
    pollIntervalMs: POLL.image,
    estimatedSeconds: 30,
    body: {
      properties: {
        model: { ...modelField([model]), default: model },
        nsfw_check: { type: 'boolean', default: false, description: 'moderate prompt and input images before submission (adds cost and latency)' },
        prompt: promptField({ maxLength: 8000, nonBlank: true }),
        n: { type: 'integer', minimum: 1, maximum: 10, default: 1 },
        aspect_ratio: { type: 'string', enum: SPARK2_RATIOS, default: 'auto' },
        resolution: { type: 'string', enum: ['1k', '2k'], default: '1k' },
        quality: { type: 'string', enum: ['low', 'medium'], default: 'medium', description: 'text-to-image only; do not send with image_urls' },
        image_urls: mediaArray('url', { minItems: 1, maxItems: 3, description: '1..3 public http(s) URLs; omit when there is no reference' }),
      },
      required: ['model', 'prompt'],
      conflicts: [
        {
          id: 'quality-with-images',
          a: ['quality'],
          b: ['image_urls'],
          status: 400,
          message: '`quality` applies to text-to-image only; remove it when sending `image_urls`',
        },
      ],
      additionalProperties: true,
    },
    normalize(body, _ctx, raw) {
      const n = body.n as number;
      const tier = body.resolution as string;
      const edit = arr(body.image_urls).length > 0;
      const upstreamBody: Body = { ...body, model };
      // the default quality belongs to text-to-image only: never send it with references
      if (edit && raw.quality === undefined) delete upstreamBody.quality;
      const ratio = body.aspect_ratio as string;
      const dims = ratio === 'auto' ? undefined : imageDims(tier === '2k' ? 2048 : 1024, ratio);
      const billing = [{ keys: billingKeys(model, tier, edit ? 'edit' : (body.quality as string)), quantity: n, label: `${n} image(s) at ${tier}` }];
      if (body.nsfw_check === true) billing.push({ keys: [`${model}@nsfw_check`], quantity: 1, label: 'moderation before submission' });
      return {
        derived: { mode: edit ? 'image-edit' : 'text-to-image', tier, ...(dims ?? {}) },
        billing,
        expected: { kind: 'images', count: n, ...(dims ?? {}), format: 'png' },
        upstreamBody,
      };
    },
  });
}
