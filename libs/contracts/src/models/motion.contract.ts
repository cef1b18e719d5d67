import { defineContract, type BuiltContract } from './define-contract';
import { URL_PATTERN, arr, mediaArray, modelField, promptField, videoDims, videoResult, POLL, VIDEO_COMMON } from './common-fields';

export function motionProContract(model: 'motion-1-0-pro-fast' | 'motion-1-0-pro-quality'): BuiltContract {
  return defineContract({
    ...VIDEO_COMMON,
    model,
    family: 'motion-1-0-pro',
    pollIntervalMs: POLL.videoQuick,
    estimatedSeconds: model === 'motion-1-0-pro-fast' ? 60 : 180,
    body: {
      properties: {
        model: modelField([model]),
        nsfw_check: { type: 'boolean', default: false, description: 'moderate prompt and input images first' },
        prompt: promptField(),
        duration: { type: 'integer', minimum: 2, maximum: 12, default: 5 },
        aspect_ratio: { type: 'string', enum: ['16:9', '9:16', '1:1'], default: '16:9' },
        resolution: { type: 'string', enum: ['720p', '1080p'], default: '1080p' },
        image_urls: mediaArray('url', { minItems: 1, maxItems: 2, description: '1: first frame; 2: first and last frame' }),
      },
      required: ['model', 'prompt'],
      additionalProperties: true,
    },
    normalize(body) {
      const images = arr(body.image_urls).length;
      const res = body.resolution as string;
      const r = videoResult({
        model,
        tier: res,
        seconds: body.duration as number,
        mode: images === 2 ? 'first-last-frame' : images === 1 ? 'image-to-video' : 'text-to-video',
        dims: images ? undefined : videoDims(res, body.aspect_ratio as string),
      });
      if (body.nsfw_check === true) r.billing.push({ keys: [`${model}@nsfw_check`], quantity: 1, label: 'moderation before submission' });
      return r;
    },
  });
}

export const ASSET_URL_PATTERN = '^asset://[A-Za-z0-9_-]{1,128}$';
const ASSET_ITEM = { type: 'string', pattern: ASSET_URL_PATTERN, patternLabel: 'an approved avatar asset url asset://<asset_id>' } as const;

/**
 * Where motion-2.0 takes approved assets. The spec names no field; `asset_urls` is ours, and a client naturally puts
 * an image where other video models take one (`image_urls`, `first_frame_image`): those work the same (asset://
 * items only, one ownership check), and one request uses one of them.
 */
export const MOTION2_ASSET_FIELDS = ['asset_urls', 'image_urls', 'first_frame_image'] as const;

/** motion-2.0: video from approved avatar assets (spec 1.5, 4.8); asset approval/ownership is checked by the edge. */
export function motion2Contract(): BuiltContract {
  const model = 'motion-2.0';
  return defineContract({
    ...VIDEO_COMMON,
    model,
    family: 'motion-2.0',
    pollIntervalMs: POLL.video,
    estimatedSeconds: 120,
    body: {
      properties: {
        model: modelField([model]),
        prompt: promptField(),
        asset_urls: { type: 'array', minItems: 1, maxItems: 4, items: ASSET_ITEM, description: 'approved avatar assets (asset://<asset_id>), 1..4' },
        image_urls: {
          type: 'array',
          minItems: 1,
          maxItems: 4,
          items: ASSET_ITEM,
          description: 'the same as asset_urls (approved avatar assets, asset://<asset_id>), 1..4',
        },
        first_frame_image: { ...ASSET_ITEM, description: 'one approved avatar asset (asset://<asset_id>), the same as asset_urls with one item' },
        audio_url: { type: 'string', media: 'url', pattern: URL_PATTERN, patternLabel: 'a public http(s) URL', description: 'optional speech audio' },
        duration: { type: 'integer', minimum: 2, maximum: 12, default: 5 },
        resolution: { type: 'string', enum: ['720p', '1080p'], default: '720p' },
        aspect_ratio: { type: 'string', enum: ['16:9', '9:16', '1:1'], default: '9:16' },
      },
      required: ['model', 'prompt'],
      anyOf: MOTION2_ASSET_FIELDS,
      anyOfMessage: '`asset_urls` is required: 1..4 approved avatar assets (asset://<asset_id>; `image_urls` or `first_frame_image` work the same)',
      conflicts: [
        {
          id: 'one-asset-field',
          a: ['asset_urls'],
          b: ['image_urls', 'first_frame_image'],
          status: 400,
          message: 'send the assets in one field: `asset_urls`, `image_urls` or `first_frame_image`',
        },
        {
          id: 'one-asset-field-frames',
          a: ['image_urls'],
          b: ['first_frame_image'],
          status: 400,
          message: 'send the assets in one field: `asset_urls`, `image_urls` or `first_frame_image`',
        },
      ],
      additionalProperties: true,
    },
    normalize(body) {
      const res = body.resolution as string;
      const field = MOTION2_ASSET_FIELDS.find((f) => body[f] !== undefined) ?? 'asset_urls';
      const urls = field === 'first_frame_image' ? [String(body[field])] : arr(body[field]).map(String);
      const assetIds = urls.map((u) => u.slice('asset://'.length));
      const r = videoResult({
        model,
        tier: res,
        seconds: body.duration as number,
        mode: 'avatar-to-video',
        dims: videoDims(res, body.aspect_ratio as string),
        extraDerived: { assetIds, assetField: field },
      });
      // the upstream gets the one field it knows; the alias the client used is not sent twice
      const { image_urls: _i, first_frame_image: _f, ...rest } = body;
      return { ...r, upstreamBody: { ...rest, asset_urls: urls, model } };
    },
  });
}
