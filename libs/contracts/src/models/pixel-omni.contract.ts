import { defineContract, type Body, type BuiltContract } from './define-contract';
import { SCHEMA_VERSION, VIDEO_ENDPOINT, arr, mediaArray, mediaString, modelField, promptField, videoDims, videoResult } from './common-fields';

const VIDEO_COMMON = {
  operation: 'video_generation' as const,
  endpoint: VIDEO_ENDPOINT,
  schemaVersion: SCHEMA_VERSION,
  pool: 'video' as const,
  ack: 'A' as const,
};

export const TASK_ID_PATTERN = '^task_[A-Za-z0-9_-]{1,128}$';

export type PixelMode = 'text-to-video' | 'image-to-video' | 'transition' | 'multi-reference' | 'extension';

/** Spec 4.7.1: checked in this order, first match wins. */
export function pixelMode(body: Body): PixelMode {
  if (arr(body.image_urls).length > 0) return 'image-to-video';
  if (body.first_frame_image !== undefined && body.last_frame_image !== undefined) return 'transition';
  if (arr(body.img_references).length > 0) return 'multi-reference';
  if (body.extend_from_task_id !== undefined) return 'extension';
  return 'text-to-video';
}

export function pixelContract(): BuiltContract {
  const model = 'pixel-v6';
  return defineContract({
    ...VIDEO_COMMON,
    model,
    family: 'pixel-v6',
    // spec 4.2: every 5 s
    pollIntervalMs: { min: 5000, max: 5000 },
    estimatedSeconds: 90,
    body: {
      properties: {
        model: modelField([model]),
        prompt: promptField({ maxLength: 5000 }),
        resolution: { type: 'string', enum: ['360p', '540p', '720p', '1080p'], default: '540p', description: 'affects price' },
        duration: { type: 'integer', minimum: 1, maximum: 15, default: 5, description: 'seconds; transition mode only 5 or 8' },
        size: {
          type: 'string',
          enum: ['16:9', '4:3', '1:1', '3:4', '9:16', '2:3', '3:2', '21:9'],
          default: '16:9',
          description: 'effective only in text-to-video and multi-reference modes',
        },
        seed: { type: 'integer', minimum: 0, maximum: 2147483647, default: 0 },
        negative_prompt: { type: 'string', maxLength: 2048 },
        audio: { type: 'boolean', default: false, description: 'adds audio and raises price' },
        watermark: { type: 'boolean', default: false },
        motion_mode: { type: 'string', enum: ['normal'], hint: '`fast` is not accepted' },
        generate_multi_clip_switch: { type: 'boolean', default: false, description: 'text-to-video and image-to-video only' },
        image_urls: mediaArray('url', { minItems: 1, description: 'image-to-video; only the first image is used' }),
        first_frame_image: mediaString('url', 'transition start frame (with last_frame_image)'),
        last_frame_image: mediaString('url', 'transition end frame (with first_frame_image)'),
        img_references: mediaArray('url', { minItems: 1, maxItems: 7, description: 'multi-reference fusion, 1..7 images' }),
        extend_from_task_id: {
          type: 'string',
          pattern: TASK_ID_PATTERN,
          patternLabel: 'a task id (task_…) of a completed pixel-v6 task',
          description: 'a completed pixel-v6 task owned by the caller',
        },
      },
      required: ['model', 'prompt'],
      together: [{ fields: ['first_frame_image', 'last_frame_image'], message: '`first_frame_image` and `last_frame_image` must be given together' }],
      additionalProperties: true,
    },
    serverRules: [
      {
        id: 'transition-duration',
        description: 'In first/last-frame transition mode `duration` is 5 or 8.',
        check(body) {
          if (pixelMode(body) !== 'transition' || body.duration === undefined || body.duration === 5 || body.duration === 8) return undefined;
          return { field: 'duration', message: `\`duration\` must be 5 or 8 in transition mode (first/last frame); got ${body.duration as number}` };
        },
      },
      {
        id: 'multi-clip-modes',
        description: '`generate_multi_clip_switch` is only for text-to-video and image-to-video.',
        check(body) {
          const mode = pixelMode(body);
          if (body.generate_multi_clip_switch !== true || mode === 'text-to-video' || mode === 'image-to-video') return undefined;
          return {
            field: 'generate_multi_clip_switch',
            message: `\`generate_multi_clip_switch\` works only for text-to-video and image-to-video; this request is ${mode}`,
          };
        },
      },
      {
        id: 'extension-ownership',
        description:
          '`extend_from_task_id` must name a completed pixel-v6 task of the caller (checked by the edge against the task store, not by this contract).',
        check: () => undefined,
      },
    ],
    normalize(body) {
      const mode = pixelMode(body);
      const res = body.resolution as string;
      const ratioApplies = mode === 'text-to-video' || mode === 'multi-reference';
      const result = videoResult({
        model,
        tier: res,
        seconds: body.duration as number,
        audio: body.audio === true,
        mode,
        dims: ratioApplies ? videoDims(res, body.size as string) : undefined,
        extraDerived: mode === 'extension' ? { extendFromTaskId: body.extend_from_task_id } : undefined,
      });
      if (mode === 'extension' || body.extend_from_task_id === undefined) return result;
      // An earlier mode won: the extension source is not used, and our task id means nothing upstream.
      const { extend_from_task_id: _unused, ...upstreamBody } = body;
      return { ...result, upstreamBody: { ...upstreamBody, model } };
    },
  });
}

/** Omni-Flash-Ext: the errors of spec 7 carry their own types. */
export function omniContract(): BuiltContract {
  const model = 'Omni-Flash-Ext';
  const ratio = { type: 'string' as const, enum: ['16:9', '9:16'] };
  return defineContract({
    ...VIDEO_COMMON,
    model,
    family: 'omni-flash',
    // spec 4.2: first query after 5-10 s, then every 5-10 s
    pollIntervalMs: { min: 5000, max: 10000 },
    estimatedSeconds: 240,
    body: {
      properties: {
        model: modelField([model]),
        prompt: promptField(),
        duration: { type: 'integer', enum: [4, 6, 8, 10], default: 6, errorType: 'invalid_duration', description: 'seconds; omit when sending video_urls' },
        resolution: { type: 'string', enum: ['720p', '1080p', '4k'], caseInsensitive: true, default: '720p', errorType: 'invalid_resolution' },
        aspect_ratio: { ...ratio, default: '16:9', description: '16:9 landscape or 9:16 portrait' },
        size: { ...ratio, description: 'synonym of aspect_ratio; must match it when both are sent' },
        image_urls: {
          ...mediaArray('url'),
          counts: [0, 1, 3],
          errorType: 'unsupported_image_count',
          errorTypeRules: ['count'],
          description: '0 (text-to-video), 1 (image-to-video) or 3 (reference fusion) images',
        },
        video_urls: {
          ...mediaArray('url', { maxItems: 1 }),
          errorType: 'unsupported_video_count',
          errorTypeRules: ['maxItems'],
          description: '0 or 1 motion-reference video',
        },
      },
      required: ['model', 'prompt'],
      conflicts: [
        {
          id: 'duration-with-video',
          a: ['duration'],
          b: ['video_urls'],
          status: 400,
          type: 'invalid_duration',
          message: '`duration` must be omitted when `video_urls` is sent (the reference video sets the length)',
        },
      ],
      additionalProperties: true,
    },
    serverRules: [
      {
        id: 'size-matches-aspect-ratio',
        description: '`size` is a synonym of `aspect_ratio`: when both are sent they must be equal.',
        check(body) {
          if (body.size === undefined || body.aspect_ratio === undefined || body.size === body.aspect_ratio) return undefined;
          return {
            field: 'size',
            message: `\`size\` (${body.size as string}) and \`aspect_ratio\` (${body.aspect_ratio as string}) disagree; send one of them or the same value`,
          };
        },
      },
    ],
    normalize(body, _ctx, raw) {
      const images = arr(body.image_urls).length;
      const videoRef = arr(body.video_urls).length > 0;
      const res = (body.resolution as string).toLowerCase();
      const ratioValue = (raw.aspect_ratio ?? raw.size ?? '16:9') as string;
      const mode = videoRef ? 'motion-reference' : images === 3 ? 'reference-fusion' : images === 1 ? 'image-to-video' : 'text-to-video';
      const upstreamBody: Body = { ...body, model, resolution: res, aspect_ratio: ratioValue };
      delete upstreamBody.size;
      if (videoRef) {
        // the reference video sets the length; billed as a flat motion-reference task
        delete upstreamBody.duration;
        const dims = videoDims(res, ratioValue);
        return {
          derived: { mode, tier: res, ...(dims ?? {}) },
          billing: [{ keys: [`${model}@motion-ref-${res}`, `${model}@motion-ref`], quantity: 1, label: `motion-reference video at ${res}` }],
          expected: { kind: 'videos', count: 1, format: 'mp4', ...(dims ?? {}) },
          upstreamBody,
        };
      }
      return { ...videoResult({ model, tier: res, seconds: body.duration as number, mode, dims: videoDims(res, ratioValue) }), upstreamBody };
    },
  });
}
