import type { NormalizedRequest } from '@gmg/contracts';
import type { FamilyTranslation, FieldRule, ProtocolTranslation, Unsupported } from '../../translation';

/**
 * Our model families on Replicate's predictions API, per the model pages' "API" tab (input schema). Each page is
 * cited on its family; a shape the page did not show us is marked "(guess)" in the note or the comment.
 */
const PAGES = {
  http: 'https://replicate.com/docs/reference/http',
  lifecycle: 'https://replicate.com/docs/topics/predictions/lifecycle',
  flux2Pro: 'https://replicate.com/black-forest-labs/flux-2-pro/api',
  flux2Flex: 'https://replicate.com/black-forest-labs/flux-2-flex/api',
  flux2Max: 'https://replicate.com/black-forest-labs/flux-2-max/api',
  seedream4: 'https://replicate.com/bytedance/seedream-4/api',
  seedancePro: 'https://replicate.com/bytedance/seedance-1-pro/api',
  seedanceFast: 'https://replicate.com/bytedance/seedance-1-pro-fast/api',
  wan25I2v: 'https://replicate.com/wan-video/wan-2.5-i2v/api',
} as const;

type Body = Record<string, unknown>;
const body = (req: NormalizedRequest): Body => req.upstreamBody;
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Replicate file inputs take an http(s) URL or a data URI; our raw Base64 becomes a data URI (type from its magic). */
function asFileInput(v: unknown): string {
  const s = String(v);
  if (/^(https?:|data:)/i.test(s)) return s;
  const type = s.startsWith('iVBOR') ? 'image/png' : s.startsWith('/9j/') ? 'image/jpeg' : s.startsWith('UklGR') ? 'image/webp' : 'application/octet-stream';
  return `data:${type};base64,${s}`;
}

const refuseIf = (cond: boolean, field: string, message: string): Unsupported | undefined => (cond ? { field, message } : undefined);

// ---- lumen-2 → FLUX.2 [flex] / [pro] / [max] ------------------------------------------------------------------------
// Pages: prompt, input_images (pro/max ≤ 8, flex ≤ 10), aspect_ratio (match_input_image, custom, 1:1, 16:9, 3:2, 2:3,
// 4:5, 5:4, 9:16, 3:4, 4:3), resolution (match_input_image, 0.5/1/2/4 MP; unused with custom), width/height 256..2048
// (with custom; rounded to a multiple of 32 by the vendor), safety_tolerance 1..5, seed, output_format webp/jpg/png,
// output_quality; flex adds steps 1..50, guidance 1.5..10 and prompt_upsampling (default true).

const FLUX_SIDE = { min: 256, max: 2048 } as const;
const FLUX_MP: Readonly<Record<string, string>> = { '1MP': '1 MP', '2MP': '2 MP', '4MP': '4 MP' };

const sizeOf = (req: NormalizedRequest): { width: number; height: number } | undefined => {
  const { width, height } = req.expected;
  return typeof width === 'number' && typeof height === 'number' ? { width, height } : undefined;
};

function lumenFields(flex: boolean): Record<string, FieldRule> {
  const flexOnly: FieldRule = { refuse: 'only FLUX.2 [flex] (lumen-2-flex) has it' };
  return {
    prompt: { to: 'prompt' },
    size: {
      to: 'aspect_ratio',
      map: (_v, req) => (sizeOf(req) ? 'custom' : 'match_input_image'),
      note: '`custom`, with the output size as `width`/`height`; `match_input_image` for `auto` after an unmeasured reference',
    },
    resolution: {
      to: 'resolution',
      map: (v, req) => (sizeOf(req) ? undefined : FLUX_MP[String(v)]),
      note: 'sent only with `size: auto` after an unmeasured reference (1 MP, 2 MP, 4 MP); otherwise the exact output size goes as `width`/`height`',
    },
    width: { to: 'width', map: (_v, req) => req.expected.width, note: 'the output size, each side 256..2048 (the vendor rounds to a multiple of 32)' },
    height: { to: 'height', map: (_v, req) => req.expected.height, note: 'as `width`' },
    image_urls: { to: 'input_images', map: (v) => list(v).map(asFileInput), note: 'Base64 sent as a data URI' },
    output_format: { to: 'output_format', map: (v) => (v === 'jpeg' ? 'jpg' : v), note: '`jpeg` → `jpg`' },
    n: { drop: 'always 1: one image per prediction' },
    seed: { to: 'seed' },
    prompt_upsampling: flex ? { to: 'prompt_upsampling' } : { drop: 'the [pro]/[max] pages list no such input (off, our default); `true` is refused' },
    safety_tolerance: { to: 'safety_tolerance', note: '1..5 on Replicate: our `0` is refused' },
    steps: flex ? { to: 'steps' } : flexOnly,
    guidance: flex ? { to: 'guidance' } : flexOnly,
  };
}

function lumenRefine(flex: boolean) {
  return (req: NormalizedRequest): Unsupported | undefined => {
    const b = body(req);
    const size = sizeOf(req);
    if (size && (Math.max(size.width, size.height) > FLUX_SIDE.max || Math.min(size.width, size.height) < FLUX_SIDE.min)) {
      const field = b.width !== undefined ? 'width' : typeof b.size === 'string' && b.size.includes('x') ? 'size' : 'resolution';
      return {
        field,
        message: `the output ${size.width}x${size.height} is outside Replicate's FLUX.2 limits (each side ${FLUX_SIDE.min}..${FLUX_SIDE.max} px); choose a lower resolution or a squarer size`,
      };
    }
    return (
      refuseIf(
        !size && !FLUX_MP[String(b.resolution)],
        'resolution',
        `\`resolution\` ${String(b.resolution)} with \`size: auto\` cannot be sent to Replicate's FLUX.2 (1MP, 2MP or 4MP)`,
      ) ??
      refuseIf(b.safety_tolerance === 0, 'safety_tolerance', "`safety_tolerance` 0 cannot be sent to Replicate's FLUX.2: its strictest level is 1") ??
      refuseIf(!flex && b.prompt_upsampling === true, 'prompt_upsampling', '`prompt_upsampling` is not offered by FLUX.2 [pro]/[max] on Replicate')
    );
  };
}

const lumen = (model: string, flex: boolean, upstream: string): FamilyTranslation => ({
  family: 'lumen-2',
  models: [model],
  defaultUpstreamModel: upstream,
  fields: lumenFields(flex),
  // the output size the contract worked out (ratio x tier, a pixel string, or width/height) goes as custom width/height
  derive: (req) => sizeOf(req) ?? {},
  refine: lumenRefine(flex),
});

// ---- dream-5-0 → Seedream 4 ------------------------------------------------------------------------------------------
// Page: prompt, image_input (1..10), size 1K/2K/4K/custom, aspect_ratio (match_input_image, 1:1, 4:3, 3:4, 16:9, 9:16,
// 3:2, 2:3, 21:9), width/height 1024..4096 (custom), sequential_image_generation disabled/auto, max_images 1..15
// (only with auto, where the model decides how many), enhance_prompt. Output: a list of URLs.

const dream: FamilyTranslation = {
  family: 'dream-5-0',
  models: ['dream-5-0-pro', 'dream-5-0-lite'],
  defaultUpstreamModel: 'bytedance/seedream-4',
  fields: {
    prompt: { to: 'prompt' },
    size: { to: 'aspect_ratio' },
    resolution: { to: 'size', note: '1K, 2K, 4K' },
    image_urls: { to: 'image_input' },
    n: { drop: 'always 1 (sequential_image_generation stays disabled: in `auto` the model, not the caller, decides the count); n > 1 is refused' },
  },
  refine: (req) =>
    refuseIf(Number(body(req).n ?? 1) > 1, 'n', "`n` > 1 cannot be sent to Replicate's Seedream 4: it makes one image per prediction (submit several tasks)"),
};

// ---- motion-1-0-pro → Seedance 1 Pro (quality) / Pro Fast -----------------------------------------------------------
// Page: prompt, image (first frame), last_frame_image (pro only: the fast page lists none, guess), duration 2..12,
// resolution 480p/720p/1080p, aspect_ratio 16:9/4:3/1:1/3:4/9:16/21:9 (ignored with an image), fps 24,
// camera_fixed, seed. Output: one URL.

function motionFields(lastFrame: boolean): Record<string, FieldRule> {
  return {
    prompt: { to: 'prompt' },
    nsfw_check: { drop: 'Replicate has no moderation before submission (false, our default); `true` is refused' },
    duration: { to: 'duration' },
    aspect_ratio: { to: 'aspect_ratio' },
    resolution: { to: 'resolution' },
    image_urls: {
      to: 'image',
      map: (v) => asFileInput(list(v)[0]),
      note: lastFrame ? 'the first item; a second one goes as `last_frame_image`' : 'the first item (one image only: a last frame is refused)',
    },
  };
}

const motion = (model: string, upstream: string, lastFrame: boolean): FamilyTranslation => ({
  family: 'motion-1-0-pro',
  models: [model],
  defaultUpstreamModel: upstream,
  fields: motionFields(lastFrame),
  derive: (req) => {
    const last = list(body(req).image_urls)[1];
    return last === undefined ? {} : { last_frame_image: asFileInput(last) };
  },
  refine: (req) =>
    refuseIf(body(req).nsfw_check === true, 'nsfw_check', '`nsfw_check` cannot be honoured through Replicate (no moderation before submission)') ??
    refuseIf(
      !lastFrame && list(body(req).image_urls).length > 1,
      'image_urls',
      `a last frame (a second \`image_urls\` item) is not offered by ${upstream} on Replicate (guess: its page lists no last_frame_image)`,
    ),
});

// ---- wave2.6-i2v-flash → Wan 2.5 image-to-video ---------------------------------------------------------------------
// Page: image (required), prompt (required), negative_prompt, audio (a wav/mp3 file), duration 5 or 10 (guess: the
// page shows "up to 10", other hosts of the model list 5 and 10), resolution 480p/720p/1080p,
// enable_prompt_expansion, seed. The model makes its own soundtrack (guess: the page has no switch to silence it).

const wave: FamilyTranslation = {
  family: 'wave2.6',
  models: ['wave2.6-i2v-flash'],
  defaultUpstreamModel: 'wan-video/wan-2.5-i2v',
  fields: {
    image_urls: { to: 'image', map: (v) => asFileInput(list(v)[0]), note: 'the one first frame; Base64 sent as a data URI' },
    prompt: { to: 'prompt', note: 'required by the vendor: a request without one is refused' },
    negative_prompt: { to: 'negative_prompt' },
    resolution: { to: 'resolution' },
    duration: { to: 'duration', note: '5 or 10 only' },
    audio: { drop: 'the model makes its soundtrack itself (true, our default); `false` is refused' },
    audio_url: { to: 'audio' },
    prompt_extend: { to: 'enable_prompt_expansion' },
    shot_type: { drop: '`single` (our default) is what the vendor makes; `multi` is refused' },
    seed: { to: 'seed' },
    watermark: { drop: 'the vendor adds none (false, our default); `true` is refused' },
  },
  refine: (req) => {
    const b = body(req);
    return (
      refuseIf(typeof b.prompt !== 'string' || !b.prompt.trim(), 'prompt', "`prompt` is required by Replicate's Wan 2.5 image-to-video") ??
      refuseIf(b.duration !== 5 && b.duration !== 10, 'duration', "`duration` must be 5 or 10 for Replicate's Wan 2.5 image-to-video") ??
      refuseIf(b.audio === false, 'audio', "a silent video (`audio: false`) cannot be made by Replicate's Wan 2.5 image-to-video") ??
      refuseIf(b.shot_type === 'multi', 'shot_type', '`shot_type` multi is not offered by Wan 2.5 on Replicate') ??
      refuseIf(b.watermark === true, 'watermark', '`watermark` is not offered by Wan 2.5 on Replicate')
    );
  },
};

export const REPLICATE_TRANSLATION: ProtocolTranslation = {
  protocol: 'replicate',
  docs: Object.values(PAGES),
  families: [
    lumen('lumen-2-flex', true, 'black-forest-labs/flux-2-flex'),
    lumen('lumen-2-pro', false, 'black-forest-labs/flux-2-pro'),
    lumen('lumen-2-max', false, 'black-forest-labs/flux-2-max'),
    dream,
    motion('motion-1-0-pro-quality', 'bytedance/seedance-1-pro', true),
    motion('motion-1-0-pro-fast', 'bytedance/seedance-1-pro-fast', false),
    wave,
  ],
};
