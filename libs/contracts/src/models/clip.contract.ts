import { defineContract, type BuiltContract } from './define-contract';
import { arr, mediaArray, modelField, videoDims, videoResult, POLL, VIDEO_COMMON } from './common-fields';

export function clipContract(model: 'clipq3-pro' | 'clipq3-turbo'): BuiltContract {
  return defineContract({
    ...VIDEO_COMMON,
    model,
    family: 'clipq3',
    pollIntervalMs: POLL.videoQuick,
    estimatedSeconds: model === 'clipq3-turbo' ? 45 : 120,
    body: {
      properties: {
        model: modelField([model]),
        prompt: { type: 'string', minLength: 1, maxLength: 2000, description: 'required for text-to-video, optional with images' },
        duration: { type: 'integer', minimum: 1, maximum: 16, default: 5 },
        resolution: { type: 'string', enum: ['540p', '720p', '1080p'], default: '720p' },
        aspect_ratio: { type: 'string', enum: ['16:9', '9:16', '4:3', '3:4', '1:1'], description: 'only when image_urls is absent (the images set the ratio)' },
        image_urls: mediaArray('url', { minItems: 1, maxItems: 2, description: '1: start frame; 2: first and last frame' }),
        audio: { type: 'boolean', default: true },
        seed: { type: 'integer', minimum: -1, maximum: 4294967295, description: '-1 or omitted means random' },
      },
      required: ['model'],
      anyOf: ['prompt', 'image_urls'],
      anyOfMessage: '`prompt` is required for text-to-video; send a `prompt`, `image_urls`, or both',
      conflicts: [
        {
          id: 'ratio-with-images',
          a: ['aspect_ratio'],
          b: ['image_urls'],
          status: 400,
          message: '`aspect_ratio` applies only without `image_urls` (the images set the ratio); remove one of them',
        },
      ],
      additionalProperties: true,
    },
    normalize(body) {
      const images = arr(body.image_urls).length;
      const res = body.resolution as string;
      const mode = images === 2 ? 'first-last-frame' : images === 1 ? 'image-to-video' : 'text-to-video';
      const r = videoResult({
        model,
        tier: res,
        seconds: body.duration as number,
        mode,
        dims: images ? undefined : videoDims(res, (body.aspect_ratio as string | undefined) ?? '16:9'),
      });
      return { ...r, derived: { ...r.derived, audio: body.audio } };
    },
  });
}
