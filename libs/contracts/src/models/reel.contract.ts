import { defineContract, type BuiltContract } from './define-contract';
import { mediaArray, mediaString, modelField, promptField, videoDims, videoResult, POLL, VIDEO_COMMON } from './common-fields';

/** Image-to-video fields: `image_urls`, and the frame names clients of other video models send (spec: not shown). */
const REEL_I2V = ['image_urls', 'first_frame_image', 'last_frame_image'];
/**
 * Multimodal references: our `reference_*_urls`, and the names the spec itself uses for references elsewhere
 * (`image_with_roles`, `video_urls`: the catalog's anyOf, wave2.7-r2v). A client sending those means references;
 * dropping them as unknown extras would silently run another mode (issue 27).
 */
const REEL_MULTIMODAL = ['reference_image_urls', 'reference_video_urls', 'reference_audio_urls', 'image_with_roles', 'video_urls'];

export function reelContract(model: 'reel-v4-fast' | 'reel-v4-std'): BuiltContract {
  return defineContract({
    ...VIDEO_COMMON,
    model,
    family: 'reel-v4',
    pollIntervalMs: POLL.videoQuick,
    estimatedSeconds: model === 'reel-v4-fast' ? 60 : 150,
    body: {
      properties: {
        model: modelField([model]),
        prompt: promptField(),
        duration: { type: 'integer', minimum: 3, maximum: 15, default: 5 },
        resolution: { type: 'string', enum: ['480p', '720p', '1080p'], default: '720p' },
        aspect_ratio: { type: 'string', enum: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'], default: '16:9' },
        prompt_optimizer: { type: 'boolean', default: true },
        image_urls: mediaArray('url', { minItems: 1, maxItems: 2, description: 'image-to-video: first frame, optional last frame' }),
        first_frame_image: mediaString('url', 'image-to-video start frame, with last_frame_image (alternative to image_urls)'),
        last_frame_image: mediaString('url', 'image-to-video end frame, with first_frame_image'),
        reference_image_urls: mediaArray('url', { minItems: 1, maxItems: 9, description: 'multimodal reference images' }),
        reference_video_urls: mediaArray('url', { minItems: 1, maxItems: 3, description: 'multimodal reference videos' }),
        reference_audio_urls: mediaArray('url', { minItems: 1, maxItems: 3, description: 'multimodal reference audio' }),
        image_with_roles: {
          type: 'array',
          minItems: 1,
          maxItems: 9,
          items: {
            type: 'object',
            properties: { url: mediaString('url'), role: { type: 'string', description: 'e.g. reference_image' } },
            required: ['url'],
            additionalProperties: true,
          },
          description: 'multimodal reference images as [{url, role}] (the same as reference_image_urls, with roles)',
        },
        video_urls: mediaArray('url', { minItems: 1, maxItems: 3, description: 'multimodal reference videos (the same as reference_video_urls)' }),
      },
      required: ['model', 'prompt'],
      together: [
        {
          fields: ['first_frame_image', 'last_frame_image'],
          message: '`first_frame_image` and `last_frame_image` must be given together (a single first frame goes in `image_urls`)',
        },
      ],
      conflicts: [
        {
          id: 'i2v-with-multimodal',
          a: REEL_I2V,
          b: REEL_MULTIMODAL,
          status: 422,
          message:
            'image-to-video fields (`image_urls`, `first_frame_image`, `last_frame_image`) and multimodal reference fields (`reference_*_urls`, `image_with_roles`, `video_urls`) cannot be combined; choose one mode',
        },
      ],
      additionalProperties: true,
    },
    normalize(body) {
      const mode = REEL_I2V.some((f) => body[f] !== undefined)
        ? 'image-to-video'
        : REEL_MULTIMODAL.some((f) => body[f] !== undefined)
          ? 'multimodal-reference'
          : 'text-to-video';
      const res = body.resolution as string;
      return videoResult({
        model,
        tier: res,
        seconds: body.duration as number,
        mode,
        dims: mode === 'image-to-video' ? undefined : videoDims(res, body.aspect_ratio as string),
      });
    },
  });
}
