import { defineContract, type Body, type BuiltContract } from './define-contract';
import { SCHEMA_VERSION, VIDEO_ENDPOINT, URL_PATTERN, arr, mediaArray, mediaString, modelField, promptField, videoDims, videoResult, POLL } from './common-fields';
import { referenceSize } from './lumen-2.dimensions';

const VIDEO_COMMON = { operation: 'video_generation' as const, endpoint: VIDEO_ENDPOINT, schemaVersion: SCHEMA_VERSION, pool: 'video' as const, ack: 'A' as const };

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
      return videoResult({ model, tier: res, seconds: body.duration as number, mode: refs ? 'image-to-video' : 'text-to-video', dims: refs ? undefined : videoDims(res, body.size as string) });
    },
  });
}

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
        image_urls: mediaArray('url-or-base64', { minItems: 1, maxItems: 1, description: 'exactly one first-frame image: URL or Base64 data URI (JPEG, PNG, BMP, WEBP; 240..8000 px; <= 10 MB)' }),
        prompt: { type: 'string', description: 'optional, recommended' },
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

const CITATION = /<<<image_(\d+)>>>/g;

export function kineticContract(): BuiltContract {
  const model = 'kinetic-video-o1';
  return defineContract({
    ...VIDEO_COMMON,
    model,
    family: 'kinetic',
    pollIntervalMs: POLL.video,
    estimatedSeconds: 150,
    body: {
      properties: {
        model: modelField([model]),
        prompt: promptField({ description: 'may cite images as <<<image_N>>> (N from 1)' }),
        mode: { type: 'string', enum: ['std', 'pro'], default: 'std', description: 'std (720P) or pro (1080P)' },
        duration: { type: 'integer', enum: [5, 10], default: 5 },
        aspect_ratio: { type: 'string', enum: ['16:9', '9:16', '1:1'], default: '16:9', description: 'may be overridden by the image ratio' },
        image_urls: mediaArray('url', { maxItems: 2, description: 'at most 2: start frame, then end frame' }),
        video_list: {
          type: 'array',
          maxItems: 1,
          items: {
            type: 'object',
            properties: {
              video_url: mediaString('url', 'reachable MP4/MOV, 3-10 s for base'),
              refer_type: { type: 'string', enum: ['base', 'feature'], default: 'base' },
              keep_original_sound: { type: 'string', enum: ['no', 'yes'], default: 'no' },
            },
            required: ['video_url'],
            additionalProperties: true,
          },
        },
      },
      required: ['model', 'prompt'],
      additionalProperties: true,
    },
    serverRules: [
      {
        id: 'video-base-no-frames',
        description: 'With a `video_list` of refer_type `base`, no start/end frames (`image_urls`) may be set; with `feature`, `image_urls` holds at most a first frame.',
        check(b) {
          const v = arr(b.video_list)[0] as Body | undefined;
          if (!v) return undefined;
          const frames = arr(b.image_urls).length;
          if ((v.refer_type ?? 'base') === 'base' && frames > 0) return { field: 'image_urls', message: '`image_urls` (start/end frames) cannot be used with a `base` reference video; remove them or use refer_type feature' };
          if (v.refer_type === 'feature' && frames > 1) return { field: 'image_urls', message: 'with a `feature` reference video `image_urls` may hold only a first frame' };
          return undefined;
        },
      },
      {
        id: 'citation-range',
        description: 'A prompt citation <<<image_N>>> must name one of the sent images (1..image count).',
        check(b) {
          const count = arr(b.image_urls).length;
          for (const m of String(b.prompt).matchAll(CITATION)) {
            const n = Number(m[1]);
            if (n < 1 || n > count) return { field: 'prompt', message: `\`prompt\` cites <<<image_${n}>>> but ${count} image(s) were sent` };
          }
          return undefined;
        },
      },
    ],
    normalize(body) {
      const images = arr(body.image_urls).length;
      const video = arr(body.video_list)[0] as Body | undefined;
      let prompt = body.prompt as string;
      if (images > 0 && !/<<<image_\d+>>>/.test(prompt)) prompt = `<<<image_1>>> ${prompt}`;
      const videoList = video ? [{ refer_type: 'base', keep_original_sound: 'no', ...video }] : undefined;
      const upstreamBody: Body = { ...body, model, prompt, ...(videoList ? { video_list: videoList } : {}) };
      const base = videoList?.[0]?.refer_type === 'base';
      // a base reference sets the output length (3-10 s), unknown here: billed as the 10 s upper bound
      const seconds = base ? 10 : (body.duration as number);
      const mode = video ? `video-${videoList![0]!.refer_type}` : images === 2 ? 'first-last-frame' : images === 1 ? 'image-to-video' : 'text-to-video';
      const res = body.mode === 'pro' ? '1080p' : '720p';
      const r = videoResult({ model, tier: body.mode as string, seconds, mode, dims: images ? undefined : videoDims(res, body.aspect_ratio as string) });
      return { ...r, upstreamBody };
    },
  });
}

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
      conflicts: [{ id: 'ratio-with-images', a: ['aspect_ratio'], b: ['image_urls'], status: 400, message: '`aspect_ratio` applies only without `image_urls` (the images set the ratio); remove one of them' }],
      additionalProperties: true,
    },
    normalize(body) {
      const images = arr(body.image_urls).length;
      const res = body.resolution as string;
      const mode = images === 2 ? 'first-last-frame' : images === 1 ? 'image-to-video' : 'text-to-video';
      const r = videoResult({ model, tier: res, seconds: body.duration as number, mode, dims: images ? undefined : videoDims(res, (body.aspect_ratio as string | undefined) ?? '16:9') });
      return { ...r, derived: { ...r.derived, audio: body.audio } };
    },
  });
}

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
      const r = videoResult({ model, tier: res, seconds: body.duration as number, mode: images === 2 ? 'first-last-frame' : images === 1 ? 'image-to-video' : 'text-to-video', dims: images ? undefined : videoDims(res, body.aspect_ratio as string) });
      if (body.nsfw_check === true) r.billing.push({ keys: [`${model}@nsfw_check`], quantity: 1, label: 'moderation before submission' });
      return r;
    },
  });
}

const REEL_I2V = ['image_urls'];
const REEL_MULTIMODAL = ['reference_image_urls', 'reference_video_urls', 'reference_audio_urls'];

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
        reference_image_urls: mediaArray('url', { minItems: 1, maxItems: 9, description: 'multimodal reference images' }),
        reference_video_urls: mediaArray('url', { minItems: 1, maxItems: 3, description: 'multimodal reference videos' }),
        reference_audio_urls: mediaArray('url', { minItems: 1, maxItems: 3, description: 'multimodal reference audio' }),
      },
      required: ['model', 'prompt'],
      conflicts: [
        { id: 'i2v-with-multimodal', a: REEL_I2V, b: REEL_MULTIMODAL, status: 422, message: 'image-to-video fields (`image_urls`) and multimodal reference fields (`reference_*_urls`) cannot be combined; choose one mode' },
      ],
      additionalProperties: true,
    },
    normalize(body) {
      const mode = body.image_urls !== undefined ? 'image-to-video' : REEL_MULTIMODAL.some((f) => body[f] !== undefined) ? 'multimodal-reference' : 'text-to-video';
      const res = body.resolution as string;
      return videoResult({ model, tier: res, seconds: body.duration as number, mode, dims: mode === 'image-to-video' ? undefined : videoDims(res, body.aspect_ratio as string) });
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

export const ASSET_URL_PATTERN = '^asset://[A-Za-z0-9_-]{1,128}$';

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
        asset_urls: {
          type: 'array',
          minItems: 1,
          maxItems: 4,
          items: { type: 'string', pattern: ASSET_URL_PATTERN, patternLabel: 'an approved avatar asset url asset://<asset_id>' },
          description: 'approved avatar assets (asset://<asset_id>), 1..4',
        },
        audio_url: { type: 'string', media: 'url', pattern: URL_PATTERN, patternLabel: 'a public http(s) URL', description: 'optional speech audio' },
        duration: { type: 'integer', minimum: 2, maximum: 12, default: 5 },
        resolution: { type: 'string', enum: ['720p', '1080p'], default: '720p' },
        aspect_ratio: { type: 'string', enum: ['16:9', '9:16', '1:1'], default: '9:16' },
      },
      required: ['model', 'prompt', 'asset_urls'],
      additionalProperties: true,
    },
    normalize(body) {
      const res = body.resolution as string;
      const assetIds = arr(body.asset_urls).map((u) => String(u).slice('asset://'.length));
      return videoResult({ model, tier: res, seconds: body.duration as number, mode: 'avatar-to-video', dims: videoDims(res, body.aspect_ratio as string), extraDerived: { assetIds } });
    },
  });
}
