import { defineContract, type BuiltContract, type ServerRule } from './define-contract';
import type { FieldSpec } from './field-dsl';
import { IMAGE_ENDPOINT, SCHEMA_VERSION, imageItem, mediaArray, modelField, promptField, POLL } from './common-fields';
import {
  LUMEN_RATIOS,
  LUMEN_ALIAS_NAMES,
  LUMEN_TIERS,
  MAX_OUTPUT_PIXELS,
  MAX_TOTAL_PIXELS,
  MIN_SIDE,
  PIXEL_STRING_PATTERN,
  lumenDimensions,
  referenceSize,
  tierOf,
} from './lumen-2.dimensions';

export const LUMEN_MODELS = ['lumen-2-flex', 'lumen-2-pro', 'lumen-2-max'] as const;
export type LumenModel = (typeof LUMEN_MODELS)[number];

const ALIASES = LUMEN_ALIAS_NAMES;

function fields(model: LumenModel): Record<string, FieldSpec> {
  const flexOnly = (f: string): FieldSpec => ({
    type: 'forbidden',
    message: `\`${f}\` is only supported by lumen-2-flex; remove it for ${model}`,
  });
  return {
    model: modelField([model]),
    prompt: promptField({ description: 'description or edit instruction' }),
    resolution: {
      type: 'string',
      enum: [...LUMEN_TIERS, ...ALIASES],
      enumLabel: `${LUMEN_TIERS.join(', ')} (or a legacy alias ${ALIASES.join(', ')})`,
      default: '2MP',
      description: 'output tier; 1MP = 1,048,576 pixels. Legacy aliases: 512, 512P, 1M → 1MP; 1K, 1024 → 2MP; 2K, 2048 → 3MP; 4K → 4MP',
    },
    size: {
      type: 'string',
      enum: [...LUMEN_RATIOS, 'auto'],
      orPattern: PIXEL_STRING_PATTERN,
      orPatternLabel: 'a pixel string <W>x<H> such as 1024x768',
      default: '1:1',
      description: 'aspect ratio, `auto` (ratio of the first reference image), or a pixel string <W>x<H> that beats `resolution`',
    },
    width: { type: 'integer', minimum: MIN_SIDE, maximum: 65536, description: 'with `height`: exact output size, overrides `resolution` and `size`' },
    height: { type: 'integer', minimum: MIN_SIDE, maximum: 65536, description: 'with `width`: exact output size, overrides `resolution` and `size`' },
    image_urls: mediaArray('url-or-base64', { maxItems: 8, description: 'reference images: public URLs or Base64 (at most 8)' }),
    output_format: { type: 'string', enum: ['jpeg', 'png', 'webp'], default: 'jpeg' },
    n: { type: 'integer', minimum: 1, maximum: 1, default: 1, hint: 'Only one image per task is supported; submit several tasks for several images' },
    seed: { type: 'integer', description: 'same seed and parameters give reproducible output (random when omitted)' },
    prompt_upsampling: { type: 'boolean', default: false },
    safety_tolerance: { type: 'integer', minimum: 0, maximum: 5, default: 2, description: 'higher is more permissive' },
    steps: model === 'lumen-2-flex' ? { type: 'integer', minimum: 1, maximum: 50, default: 50 } : flexOnly('steps'),
    guidance: model === 'lumen-2-flex' ? { type: 'number', minimum: 1.5, maximum: 10, default: 5.0 } : flexOnly('guidance'),
  };
}

const fmtMP = (px: number) => `${(px / 1_048_576).toFixed(2)} MP`;

const RULES: ServerRule[] = [
  {
    id: 'pixel-string-limits',
    description: 'A pixel-string `size` <W>x<H> obeys the width/height limits: each side at least 64, W*H at most 4,194,304.',
    check(body) {
      const m = typeof body.size === 'string' ? /^(\d+)x(\d+)$/.exec(body.size) : null;
      if (!m || (typeof body.width === 'number' && typeof body.height === 'number')) return undefined;
      const [w, h] = [Number(m[1]), Number(m[2])];
      if (w < MIN_SIDE || h < MIN_SIDE) return { field: 'size', message: `\`size\` ${m[0]}: each side must be at least ${MIN_SIDE} pixels` };
      if (w * h > MAX_OUTPUT_PIXELS) {
        return { field: 'size', message: `\`size\` ${m[0]} is ${fmtMP(w * h)}; the output may be at most 4 MP (width*height <= 4194304)` };
      }
      return undefined;
    },
  },
  {
    id: 'output-pixels',
    description: 'With `width` and `height`, width*height is at most 4,194,304 (4 MP).',
    check(body) {
      if (typeof body.width !== 'number' || typeof body.height !== 'number') return undefined;
      const px = body.width * body.height;
      return px > MAX_OUTPUT_PIXELS
        ? { field: 'width', message: `\`width\`*\`height\` = ${px} (${fmtMP(px)}); the output may be at most 4 MP (4194304 pixels)` }
        : undefined;
    },
  },
  {
    id: 'total-pixels',
    description:
      "Output plus all reference images at most 9 MP. Base64 references are measured from their header, the gateway's own uploads from their stored size; other URL references are not fetched at the edge and count as 0 here (the upstream enforces the limit for them).",
    check(body, ctx) {
      const refs = Array.isArray(body.image_urls) ? (body.image_urls as string[]) : [];
      if (refs.length === 0) return undefined;
      const out = lumenDimensions(body, ctx.referenceSizes);
      let total = out.width * out.height;
      for (const r of refs) {
        const s = referenceSize(r, ctx.referenceSizes);
        if (s) total += s.width * s.height;
      }
      return total > MAX_TOTAL_PIXELS
        ? {
            field: 'image_urls',
            message: `output plus reference images is ${fmtMP(total)}; at most 9 MP is allowed (use smaller references or a lower resolution)`,
          }
        : undefined;
    },
  },
];

export function lumenContract(model: LumenModel): BuiltContract {
  return defineContract({
    model,
    family: 'lumen-2',
    operation: 'image_generation',
    endpoint: IMAGE_ENDPOINT,
    schemaVersion: SCHEMA_VERSION,
    ack: 'A',
    pool: 'image',
    pollIntervalMs: POLL.image,
    estimatedSeconds: model === 'lumen-2-max' ? 40 : model === 'lumen-2-pro' ? 25 : 20,
    body: {
      properties: fields(model),
      required: ['model', 'prompt'],
      together: [{ fields: ['width', 'height'], message: '`width` and `height` must be given together (or neither)' }],
      additionalProperties: true,
    },
    serverRules: RULES,
    normalize(body, ctx) {
      const dims = lumenDimensions(body, ctx.referenceSizes);
      const format = body.output_format as string;
      const upstreamBody = { ...body, model, resolution: tierOf(body.resolution as string) };
      // `size: auto` after an unmeasured URL: the upstream measures the reference, so the size is its to choose
      // (the tier, hence the price, is known either way).
      const size = dims.source === 'auto-upstream' ? {} : { width: dims.width, height: dims.height };
      const mode = Array.isArray(body.image_urls) && body.image_urls.length ? 'image-to-image' : 'text-to-image';
      return {
        // Object.assign, not a leading spread: properties added after one are slow on Node 20 (define-contract.ts)
        derived: Object.assign({}, size, { tier: dims.tier, ratio: dims.ratio, dimensionSource: dims.source, mode }),
        billing: [imageItem(model, dims.tier, 1)],
        expected: { kind: 'images', count: 1, ...size, format },
        upstreamBody,
      };
    },
  });
}
