import { defineContract, type BuiltContract } from './define-contract';
import { arr, mediaArray, modelField, promptField, videoDims, videoResult, POLL, VIDEO_COMMON } from './common-fields';

/** spark-imagine-1.5-video-main (alias -ext): duration must be a JSON number 6..15; no Base64. */
export function sparkVideoContract(): BuiltContract {
  const model = 'spark-imagine-1.5-video-main';
  return defineContract({
    ...VIDEO_COMMON,
    model,
    family: 'spark-imagine-1.5-video',
    pollIntervalMs: POLL.video,
    estimatedSeconds: 120,
    body: {
      properties: {
        model: { ...modelField([model, 'spark-imagine-1.5-video-ext']), default: model },
        prompt: promptField(),
        size: { type: 'string', enum: ['16:9', '9:16', '1:1', '3:2', '2:3'], default: '16:9' },
        duration: { type: 'integer', minimum: 6, maximum: 15, default: 6, description: 'seconds, a JSON number (not a string)' },
        resolution: { type: 'string', enum: ['480p', '720p'], default: '480p' },
        image_urls: mediaArray('url', { maxItems: 7, description: 'at most 7 public URLs; the output ratio follows the reference image' }),
      },
      required: ['model', 'prompt'],
      additionalProperties: true,
    },
    normalize(body) {
      const refs = arr(body.image_urls).length;
      const res = body.resolution as string;
      return videoResult({
        model,
        tier: res,
        seconds: body.duration as number,
        mode: refs ? 'image-to-video' : 'text-to-video',
        dims: refs ? undefined : videoDims(res, body.size as string),
      });
    },
  });
}
