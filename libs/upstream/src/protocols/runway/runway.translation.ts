import type { NormalizedRequest } from '@gmg/contracts';
import type { FamilyTranslation, FieldRule, ProtocolTranslation, Unsupported } from '../../translation';

/**
 * Runway's API (docs/upstreams/runway.md): `POST /v1/text_to_video` or `/v1/image_to_video` with `model`,
 * `promptText`, `promptImage`, `ratio` (the output size as `W:H` pixels), `duration`. Shapes from Runway's SDK,
 * generated from its OpenAPI spec (runwayml/sdk-node src/resources/{text-to-video,image-to-video}.ts).
 */
const RUNWAY_DOCS = [
  'https://docs.dev.runwayml.com/api/',
  'https://docs.dev.runwayml.com/guides/using-the-api',
  'https://docs.dev.runwayml.com/errors/errors',
  'https://docs.dev.runwayml.com/errors/task-failures/',
  'https://github.com/runwayml/sdk-node/blob/main/src/resources/image-to-video.ts',
  'https://github.com/runwayml/sdk-node/blob/main/src/resources/text-to-video.ts',
  'https://github.com/runwayml/sdk-node/blob/main/src/resources/tasks.ts',
] as const;

type Check = (req: NormalizedRequest) => Unsupported | undefined;
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const urlOf = (x: unknown): string => (typeof x === 'string' ? x : String((x as { url?: unknown }).url));

function refuseWhen(field: string, bad: (v: unknown, req: NormalizedRequest) => boolean, why: string): Check {
  return (req) => {
    const v = req.upstreamBody[field];
    if (v === undefined || !bad(v, req)) return undefined;
    return { field, message: `\`${field}\` ${JSON.stringify(v)} is not supported for ${req.requestedModel} through the runway protocol: ${why}` };
  };
}
const onlyValues = (field: string, allowed: readonly unknown[], what: string): Check =>
  refuseWhen(field, (v) => !allowed.includes(v), `${what} ${allowed.map((a) => JSON.stringify(a)).join(', ')}`);
const firstProblem =
  (...checks: Check[]): Check =>
  (req) => {
    for (const c of checks) {
      const p = c(req);
      if (p) return p;
    }
    return undefined;
  };

/** Frames as Runway's `promptImage` array: the first image opens the video, a second one closes it. */
const frames = (urls: unknown): { uri: string; position: 'first' | 'last' }[] =>
  list(urls)
    .slice(0, 2)
    .map((u, i) => ({ uri: urlOf(u), position: i === 0 ? 'first' : 'last' }));

/** Runway's `ratio` for our resolution and aspect ratio (the exact enums of Runway's SDK, per model). */
type RatioTable = Readonly<Record<string, Readonly<Record<string, string>>>>;
const ratioOf = (table: RatioTable, req: NormalizedRequest): string | undefined =>
  table[String(req.upstreamBody.resolution).toLowerCase()]?.[String(req.upstreamBody.aspect_ratio)];
const SIZE_NOTE = 'in the derived `ratio` (Runway names the output size in pixels)';

/** Seedance 2.0 (`seedance2`; `seedance2_fast` makes 480p and 720p only). */
const SEEDANCE_RATIOS: RatioTable = {
  '480p': { '21:9': '992:432', '16:9': '864:496', '4:3': '752:560', '1:1': '640:640', '3:4': '560:752', '9:16': '496:864' },
  '720p': { '21:9': '1470:630', '16:9': '1280:720', '4:3': '1112:834', '1:1': '960:960', '3:4': '834:1112', '9:16': '720:1280' },
  '1080p': { '21:9': '2206:946', '16:9': '1920:1080', '4:3': '1664:1248', '1:1': '1440:1440', '3:4': '1248:1664', '9:16': '1080:1920' },
};
const references = (v: unknown) => list(v).map((x) => ({ uri: urlOf(x) }));
const typed = (type: 'video' | 'audio') => (v: unknown) => list(v).map((x) => ({ type, uri: urlOf(x) }));

function reel(model: 'reel-v4-fast' | 'reel-v4-std', vendor: string): FamilyTranslation {
  const fields: Record<string, FieldRule> = {
    prompt: { to: 'promptText' },
    duration: { to: 'duration', note: '4–15 s (guess: Seedance 2.0’s range; the SDK says only "number")' },
    resolution: { drop: SIZE_NOTE },
    aspect_ratio: { drop: `${SIZE_NOTE}; sent with frames too (Runway fits the frame to it, guess)` },
    prompt_optimizer: { drop: "Runway's Seedance 2.0 has no prompt optimizer switch" },
    image_urls: { to: 'promptImage', map: frames, note: '`[{uri, position: "first"}, {uri, position: "last"}]` on `/v1/image_to_video`' },
    first_frame_image: { drop: 'with `last_frame_image`, in the derived `promptImage` (first, last)' },
    last_frame_image: { drop: 'with `first_frame_image`, in the derived `promptImage` (first, last)' },
    reference_image_urls: { to: 'references', map: references, note: '`[{uri}]` on `/v1/text_to_video`' },
    image_with_roles: { to: 'references', map: references, note: 'the urls as `[{uri}]` (every role is a reference image)' },
    reference_video_urls: { to: 'referenceVideos', map: typed('video'), note: '`[{type: "video", uri}]`' },
    video_urls: { to: 'referenceVideos', map: typed('video'), note: '`[{type: "video", uri}]`' },
    reference_audio_urls: { to: 'referenceAudio', map: typed('audio'), note: '`[{type: "audio", uri}]`' },
  };
  const resolutions = model === 'reel-v4-fast' ? ['480p', '720p'] : ['480p', '720p', '1080p'];
  return {
    family: `reel-v4 (${vendor})`,
    models: [model],
    defaultUpstreamModel: vendor,
    fields,
    derive: (req) => {
      const b = req.upstreamBody;
      const out: Record<string, unknown> = {};
      const ratio = ratioOf(SEEDANCE_RATIOS, req);
      if (ratio) out.ratio = ratio;
      if (b.first_frame_image !== undefined) out.promptImage = frames([b.first_frame_image, b.last_frame_image].filter((u) => u !== undefined));
      return out;
    },
    refine: firstProblem(
      refuseWhen('duration', (v) => typeof v !== 'number' || v < 4 || v > 15, "Runway's Seedance 2.0 makes 4 to 15 seconds (guess)"),
      onlyValues('resolution', resolutions, `Runway's ${vendor} makes`),
      refuseWhen('image_with_roles', (_v, req) => req.upstreamBody.reference_image_urls !== undefined, 'send the reference images in one field'),
      refuseWhen('video_urls', (_v, req) => req.upstreamBody.reference_video_urls !== undefined, 'send the reference videos in one field'),
      refuseWhen('first_frame_image', (_v, req) => req.upstreamBody.image_urls !== undefined, 'send the frames in one field'),
      refuseWhen('prompt', (v) => typeof v === 'string' && v.length > 3500, "Runway's Seedance 2.0 takes up to 3500 characters"),
    ),
  };
}

/** Veo 3.1 Fast (`veo3.1_fast`): 720p or 1080p, 16:9 or 9:16, 4/6/8 s, a first frame (and optionally a last one). */
const VEO_RATIOS: RatioTable = { '720p': { '16:9': '1280:720', '9:16': '720:1280' }, '1080p': { '16:9': '1920:1080', '9:16': '1080:1920' } };
const omni: FamilyTranslation = {
  family: 'omni-flash (veo3.1_fast)',
  models: ['Omni-Flash-Ext'],
  defaultUpstreamModel: 'veo3.1_fast',
  fields: {
    prompt: { to: 'promptText', note: 'up to 1000 characters' },
    duration: { to: 'duration', note: '4, 6 or 8 (10 is refused)' },
    resolution: { drop: `${SIZE_NOTE}; 4k is refused` },
    aspect_ratio: { drop: SIZE_NOTE },
    image_urls: { to: 'promptImage', map: (v) => frames(list(v).slice(0, 1)), note: 'one image as the first frame (three: refused)' },
    video_urls: { refuse: "Runway's Veo 3.1 takes no motion-reference video" },
  },
  derive: (req) => {
    const ratio = ratioOf(VEO_RATIOS, req);
    return ratio ? { ratio } : {};
  },
  refine: firstProblem(
    onlyValues('duration', [4, 6, 8], "Runway's Veo 3.1 Fast makes"),
    onlyValues('resolution', ['720p', '1080p'], "Runway's Veo 3.1 Fast makes"),
    refuseWhen('image_urls', (v) => list(v).length > 1, "reference fusion (3 images) is not offered by Runway's Veo 3.1 Fast"),
    refuseWhen('prompt', (v) => typeof v === 'string' && v.length > 1000, "Runway's Veo 3.1 takes up to 1000 characters"),
  ),
};

export const RUNWAY_TRANSLATION: ProtocolTranslation = {
  protocol: 'runway',
  docs: RUNWAY_DOCS,
  families: [reel('reel-v4-std', 'seedance2'), reel('reel-v4-fast', 'seedance2_fast'), omni],
};

/** The endpoint of a translated body: frames make an image-to-video task, anything else a text-to-video one. */
export const runwayEndpointOf = (body: Readonly<Record<string, unknown>>): '/v1/image_to_video' | '/v1/text_to_video' =>
  body.promptImage !== undefined ? '/v1/image_to_video' : '/v1/text_to_video';
