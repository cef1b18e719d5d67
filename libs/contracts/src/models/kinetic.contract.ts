import { defineContract, type Body, type BuiltContract } from './define-contract';
import { arr, mediaArray, mediaString, modelField, promptField, videoDims, videoResult, POLL, VIDEO_COMMON } from './common-fields';

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
        description:
          'With a `video_list` of refer_type `base`, no start/end frames (`image_urls`) may be set; with `feature`, `image_urls` holds at most a first frame.',
        check(b) {
          const v = arr(b.video_list)[0] as Body | undefined;
          if (!v) return undefined;
          const frames = arr(b.image_urls).length;
          if ((v.refer_type ?? 'base') === 'base' && frames > 0)
            return {
              field: 'image_urls',
              message: '`image_urls` (start/end frames) cannot be used with a `base` reference video; remove them or use refer_type feature',
            };
          if (v.refer_type === 'feature' && frames > 1)
            return { field: 'image_urls', message: 'with a `feature` reference video `image_urls` may hold only a first frame' };
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
