import { defineContract, type Body, type BuiltContract } from './define-contract';
import { DEFAULT_PROMPT_MAX_LENGTH, arr, mediaArray, mediaString, modelField, promptField, videoResult, POLL, VIDEO_COMMON } from './common-fields';
import { referenceSize } from './lumen-2.dimensions';

export type WaveAudio = 'generated' | 'provided' | 'silent';

/** Spec 4.7.4 audio rule: audio:false wins; else audio_url is used when sent; else audio is generated. */
export function waveAudio(body: Body): WaveAudio {
  if (body.audio === false) return 'silent';
  return typeof body.audio_url === 'string' ? 'provided' : 'generated';
}

export function waveI2vContract(): BuiltContract {
  const model = 'wave2.6-i2v-flash';
  return defineContract({
    ...VIDEO_COMMON,
    model,
    family: 'wave2.6',
    pollIntervalMs: POLL.videoQuick,
    estimatedSeconds: 90,
    body: {
      properties: {
        model: modelField([model]),
        image_urls: mediaArray('url-or-base64', {
          minItems: 1,
          maxItems: 1,
          description: 'exactly one first-frame image: URL or Base64 data URI (JPEG, PNG, BMP, WEBP; 240..8000 px; <= 10 MB)',
        }),
        prompt: { type: 'string', maxLength: DEFAULT_PROMPT_MAX_LENGTH, description: 'optional, recommended' },
        negative_prompt: { type: 'string', maxLength: 500 },
        resolution: { type: 'string', enum: ['720p', '1080p'], default: '1080p', description: 'the ratio comes from the input image' },
        duration: { type: 'integer', minimum: 2, maximum: 15, default: 5 },
        audio: { type: 'boolean', default: true, description: 'false gives a silent video' },
        audio_url: mediaString('url', 'wav or mp3, 3-30 s, <= 15 MB; ignored when audio is false'),
        prompt_extend: { type: 'boolean', default: true },
        shot_type: { type: 'string', enum: ['single', 'multi'], default: 'single', description: 'needs prompt_extend true' },
        seed: { type: 'integer', minimum: 0 },
        watermark: { type: 'boolean', default: false },
      },
      required: ['model', 'image_urls'],
      additionalProperties: true,
    },
    serverRules: [
      {
        id: 'shot-type-needs-prompt-extend',
        description: '`shot_type` `multi` needs `prompt_extend` true.',
        check: (b) =>
          b.shot_type === 'multi' && b.prompt_extend === false
            ? { field: 'shot_type', message: '`shot_type` multi needs `prompt_extend` true; remove `prompt_extend: false` or use `single`' }
            : undefined,
      },
      {
        id: 'base64-image-size',
        description: 'A Base64 first frame must be 240..8000 px on each side and at most 10 MB (URL images are checked upstream).',
        check(b) {
          const img = arr(b.image_urls)[0];
          if (typeof img !== 'string' || /^https?:\/\//i.test(img)) return undefined;
          if ((img.length * 3) / 4 > 10 * 1024 * 1024) return { field: 'image_urls.0', message: '`image_urls.0` is larger than 10 MB' };
          const s = referenceSize(img);
          if (s && (s.width < 240 || s.height < 240 || s.width > 8000 || s.height > 8000)) {
            return { field: 'image_urls.0', message: `\`image_urls.0\` is ${s.width}x${s.height}; width and height must be 240..8000 px` };
          }
          return undefined;
        },
      },
    ],
    normalize(body) {
      const audio = waveAudio(body);
      const upstreamBody: Body = { ...body, model };
      if (audio === 'silent') delete upstreamBody.audio_url;
      const r = videoResult({ model, tier: body.resolution as string, seconds: body.duration as number, audio: audio !== 'silent', mode: 'image-to-video' });
      return { ...r, derived: { ...r.derived, audio }, upstreamBody };
    },
  });
}

const RES_P = { type: 'string' as const, enum: ['720P', '1080P'], caseInsensitive: true, default: '1080P' };

export function waveEditContract(): BuiltContract {
  const model = 'wave2.7-videoedit';
  return defineContract({
    ...VIDEO_COMMON,
    model,
    family: 'wave2.7',
    pollIntervalMs: POLL.video,
    estimatedSeconds: 150,
    body: {
      properties: {
        model: modelField([model]),
        video_urls: mediaArray('url', { minItems: 1, maxItems: 1, description: 'the video to edit (exactly one)' }),
        prompt: promptField({ description: 'the edit: style transfer, replacement, additions' }),
        image_urls: mediaArray('url', { minItems: 1, maxItems: 4, description: 'optional reference images' }),
        resolution: RES_P,
        duration: { type: 'integer', minimum: 2, maximum: 15, description: 'omit to keep the original duration' },
      },
      required: ['model', 'video_urls', 'prompt'],
      additionalProperties: true,
    },
    normalize(body) {
      const res = (body.resolution as string).toUpperCase();
      // keeping the original length: unknown at the edge, billed as 10 s
      const seconds = (body.duration as number | undefined) ?? 10;
      const r = videoResult({ model, tier: res.toLowerCase(), seconds, mode: 'video-edit' });
      return { ...r, derived: { ...r.derived, keepsOriginalDuration: body.duration === undefined }, upstreamBody: { ...body, model, resolution: res } };
    },
  });
}

export function waveR2vContract(): BuiltContract {
  const model = 'wave2.7-r2v';
  return defineContract({
    ...VIDEO_COMMON,
    model,
    family: 'wave2.7',
    pollIntervalMs: POLL.video,
    estimatedSeconds: 150,
    body: {
      properties: {
        model: modelField([model]),
        prompt: promptField(),
        image_with_roles: {
          type: 'array',
          minItems: 1,
          maxItems: 4,
          items: {
            type: 'object',
            properties: { url: mediaString('url'), role: { type: 'string', enum: ['reference_image'], default: 'reference_image' } },
            required: ['url'],
            additionalProperties: true,
          },
          description: 'reference images: [{url, role: reference_image}], 1..4',
        },
        reference_voice_url: mediaString('url', 'optional reference voice (wav or mp3)'),
        resolution: RES_P,
        duration: { type: 'integer', minimum: 2, maximum: 10, default: 5 },
      },
      required: ['model', 'prompt', 'image_with_roles'],
      additionalProperties: true,
    },
    normalize(body) {
      const res = (body.resolution as string).toUpperCase();
      const r = videoResult({ model, tier: res.toLowerCase(), seconds: body.duration as number, mode: 'reference-to-video' });
      const refs = arr(body.image_with_roles).map((x) => ({ role: 'reference_image', ...(x as Body) }));
      return { ...r, upstreamBody: { ...body, model, resolution: res, image_with_roles: refs } };
    },
  });
}
