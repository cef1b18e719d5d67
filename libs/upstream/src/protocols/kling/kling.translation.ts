import type { NormalizedRequest } from '@gmg/contracts';
import type { FamilyTranslation, ProtocolTranslation, Unsupported } from '../../translation';

/**
 * Kling's official API (docs/upstreams/kling.md). Only Kling O1 (`/v1/videos/omni-video`) has a family of ours:
 * `kinetic-video-o1` is its contract (`<<<image_N>>>` citations, start/end frames, one `base`/`feature` video).
 * The legacy `text2video` / `image2video` models (kling-v1 … kling-v2-6) and the image endpoints serve no family of
 * ours, so no row names them (the adapter still polls whichever path a task was submitted on).
 */
const KLING_DOCS = [
  'https://app.klingai.com/global/dev/document-api/apiReference/model/OmniVideo',
  'https://app.klingai.com/global/dev/document-api/apiReference/commonInfo',
  'https://github.com/QuantumNous/new-api/blob/main/relay/channel/task/kling/adaptor.go',
  'https://github.com/Comfy-Org/ComfyUI/blob/master/comfy_api_nodes/apis/kling.py',
] as const;

/** The Omni-Video path (its poll is the same path + `/{task_id}`). */
export const KLING_OMNI_PATH = '/v1/videos/omni-video';

/** Kling takes Base64 without a `data:` prefix (commonInfo, "File Requirements"). */
const klingImage = (ref: unknown): unknown => (typeof ref === 'string' ? ref.replace(/^data:[^,]{0,200};base64,/i, '') : ref);

type Video = Record<string, unknown>;
const videoOf = (req: NormalizedRequest): Video | undefined => {
  const list = req.upstreamBody.video_list;
  return Array.isArray(list) && typeof list[0] === 'object' && list[0] !== null ? (list[0] as Video) : undefined;
};
const VIDEO_KEYS = ['video_url', 'refer_type', 'keep_original_sound'];

/** A `base` video is edited: its length and frame set the output's (Kling: no `duration`, no `aspect_ratio`). */
const editsVideo = (req: NormalizedRequest): boolean => videoOf(req)?.refer_type === 'base';
const hasFirstFrame = (req: NormalizedRequest): boolean => Array.isArray(req.upstreamBody.image_urls) && req.upstreamBody.image_urls.length > 0;

/** Our reference video's extra keys (our contract lets them through) have no Kling field: refused, not dropped. */
function refineVideo(req: NormalizedRequest): Unsupported | undefined {
  const extra = Object.keys(videoOf(req) ?? {}).find((k) => !VIDEO_KEYS.includes(k));
  if (!extra) return undefined;
  return {
    field: `video_list.0.${extra}`,
    message: `\`video_list[0].${extra}\` is not supported through the kling protocol (Kling takes ${VIDEO_KEYS.join(', ')})`,
  };
}

const kinetic: FamilyTranslation = {
  family: 'kinetic (Kling O1)',
  models: ['kinetic-video-o1'],
  defaultUpstreamModel: 'kling-video-o1',
  fields: {
    prompt: { to: 'prompt', note: '`<<<image_N>>>` citations as Kling writes them' },
    mode: { to: 'mode', note: 'std (720p) / pro (1080p), as ours' },
    duration: {
      to: 'duration',
      map: (v, req) => (editsVideo(req) ? undefined : String(v)),
      note: 'a string (`"5"`, `"10"`); not sent when a `base` video is edited (its length is the output\u2019s)',
    },
    aspect_ratio: {
      to: 'aspect_ratio',
      map: (v, req) => (editsVideo(req) || hasFirstFrame(req) ? undefined : v),
      note: 'only without a first frame and without a `base` video (Kling takes the ratio from them)',
    },
    image_urls: {
      to: 'image_list',
      map: (v) => (v as unknown[]).map((url, i) => ({ image_url: klingImage(url), type: i === 0 ? 'first_frame' : 'end_frame' })),
      note: '`[{image_url, type}]`: the first is `first_frame`, the second `end_frame`; a `data:` prefix is removed',
    },
    video_list: {
      to: 'video_list',
      map: (v) => (v as Video[]).map((x) => ({ video_url: x.video_url, refer_type: x.refer_type, keep_original_sound: x.keep_original_sound })),
      note: '`[{video_url, refer_type, keep_original_sound}]`, as ours',
    },
  },
  refine: refineVideo,
};

export const KLING_TRANSLATION: ProtocolTranslation = { protocol: 'kling', docs: KLING_DOCS, families: [kinetic] };
