import type { NormalizedRequest } from '@gmg/contracts';
import type { FamilyTranslation, FieldRule, ProtocolTranslation, Unsupported } from '../../translation';

/**
 * Alibaba Cloud Model Studio (DashScope), the Wan video models (docs/upstreams/dashscope.md): one endpoint for every
 * model, `POST /api/v1/services/aigc/video-generation/video-synthesis`, body `{model, input: {...}, parameters: {...}}`.
 * The table names the vendor's fields by their dotted path (`input.prompt`, `parameters.duration`); the adapter nests
 * them. wan2.6 takes `input.img_url`; the wan2.7 models take their files as `input.media: [{type, url}]`.
 */
const DASHSCOPE_DOCS = [
  'https://www.alibabacloud.com/help/en/model-studio/image-to-video-api-reference/',
  'https://www.alibabacloud.com/help/en/model-studio/wan-video-editing-api-reference',
  'https://www.alibabacloud.com/help/en/model-studio/wan-video-to-video-api-reference',
  'https://github.com/QuantumNous/new-api/tree/main/relay/channel/task/ali',
] as const;

/** wan2.7-videoedit cuts the input to 2..10 s (0 or absent: the input's own length); our contract allows up to 15. */
const EDIT_MAX_SECONDS = 10;

const upper = (v: unknown): unknown => (typeof v === 'string' ? v.toUpperCase() : v);

/** A Base64 image without a `data:` prefix gets the one DashScope requires (`data:{MIME};base64,`), sniffed from its first bytes. */
const SNIFF: ReadonlyArray<[string, string]> = [
  ['iVBOR', 'image/png'],
  ['/9j/', 'image/jpeg'],
  ['UklGR', 'image/webp'],
  ['Qk', 'image/bmp'],
];
function dashImage(v: unknown): unknown {
  if (typeof v !== 'string' || /^(https?:|data:)/i.test(v)) return v;
  const mime = SNIFF.find(([head]) => v.startsWith(head))?.[1] ?? 'image/png';
  return `data:${mime};base64,${v}`;
}

const urls = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

const I2V: Readonly<Record<string, FieldRule>> = {
  image_urls: {
    to: 'input.img_url',
    map: (v) => dashImage(urls(v)[0]),
    note: 'the one first frame; Base64 gets its `data:` prefix',
  },
  prompt: { to: 'input.prompt' },
  negative_prompt: { to: 'input.negative_prompt' },
  audio_url: { to: 'input.audio_url' },
  resolution: { to: 'parameters.resolution', map: upper, note: '`720P` / `1080P`' },
  duration: { to: 'parameters.duration' },
  audio: { to: 'parameters.audio', note: 'false: a silent video (wan2.6-i2v-flash only)' },
  prompt_extend: { to: 'parameters.prompt_extend' },
  shot_type: { to: 'parameters.shot_type' },
  seed: { to: 'parameters.seed' },
  watermark: { to: 'parameters.watermark' },
};

const IN_MEDIA = 'carried in `input.media`';

/** wan2.7-videoedit: the video to edit, then the reference images, as `input.media` items. */
function editMedia(req: NormalizedRequest): Record<string, unknown> {
  const b = req.upstreamBody;
  const media = [...urls(b.video_urls).map((url) => ({ type: 'video', url })), ...urls(b.image_urls).map((url) => ({ type: 'reference_image', url }))];
  return { 'input.media': media };
}

const EDIT: Readonly<Record<string, FieldRule>> = {
  video_urls: { drop: `${IN_MEDIA} as \`{type: "video", url}\`` },
  image_urls: { drop: `${IN_MEDIA} as \`{type: "reference_image", url}\` items, after the video` },
  prompt: { to: 'input.prompt' },
  resolution: { to: 'parameters.resolution', note: '`720P` / `1080P`' },
  duration: { to: 'parameters.duration', note: 'absent: the input video’s own length (2–10 s)' },
};

function refineEdit(req: NormalizedRequest): Unsupported | undefined {
  const d = req.upstreamBody.duration;
  if (typeof d === 'number' && d > EDIT_MAX_SECONDS) {
    return {
      field: 'duration',
      message: `\`duration\` ${d} is not supported for ${req.requestedModel} through the dashscope protocol: wan2.7-videoedit keeps at most ${EDIT_MAX_SECONDS} s`,
    };
  }
  return undefined;
}

/**
 * wan2.7-r2v: each reference image is a `reference_image` item; the one reference voice rides on the first of them
 * as its `reference_voice` (guess: Model Studio binds a voice to a reference image; the field name is from resellers'
 * pages that forward DashScope's shape).
 */
function r2vMedia(req: NormalizedRequest): Record<string, unknown> {
  const b = req.upstreamBody;
  const refs = Array.isArray(b.image_with_roles) ? (b.image_with_roles as { url?: unknown }[]) : [];
  const voice = typeof b.reference_voice_url === 'string' ? b.reference_voice_url : undefined;
  const media = refs.map((r, i) => ({ type: 'reference_image', url: r.url, ...(i === 0 && voice ? { reference_voice: voice } : {}) }));
  return { 'input.media': media };
}

const R2V: Readonly<Record<string, FieldRule>> = {
  prompt: { to: 'input.prompt' },
  image_with_roles: { drop: `${IN_MEDIA} as \`{type: "reference_image", url}\` items (our only role)` },
  reference_voice_url: { drop: `${IN_MEDIA}: \`reference_voice\` of the first reference image (guess)` },
  resolution: { to: 'parameters.resolution', note: '`720P` / `1080P`' },
  duration: { to: 'parameters.duration' },
};

const row = (
  family: string,
  model: string,
  vendor: string,
  fields: Readonly<Record<string, FieldRule>>,
  extra: Partial<FamilyTranslation> = {},
): FamilyTranslation => ({
  family: `${family} (${vendor})`,
  models: [model],
  defaultUpstreamModel: vendor,
  fields,
  ...extra,
});

export const DASHSCOPE_TRANSLATION: ProtocolTranslation = {
  protocol: 'dashscope',
  docs: DASHSCOPE_DOCS,
  families: [
    row('wave2.6', 'wave2.6-i2v-flash', 'wan2.6-i2v-flash', I2V),
    row('wave2.7', 'wave2.7-videoedit', 'wan2.7-videoedit', EDIT, { derive: editMedia, refine: refineEdit }),
    row('wave2.7', 'wave2.7-r2v', 'wan2.7-r2v', R2V, { derive: r2vMedia }),
  ],
};
