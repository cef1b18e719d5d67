import type { NormalizedRequest } from '@gmg/contracts';
import type { FamilyTranslation, ProtocolTranslation, Unsupported } from '../../translation';

/**
 * ByteDance ModelArk (BytePlus ModelArk, Volcengine Ark): Seedance video by the content-generation task, Seedream
 * images by the synchronous images call. Video options go as top-level body fields (`ratio`, `resolution`,
 * `duration`, `watermark`): the API reference documents them beside the older `--rs/--rt/--dur` text commands and
 * validates them strictly (a wrong value is a 400, where a text command is silently ignored).
 */
const DOCS = [
  'https://docs.byteplus.com/en/docs/ModelArk/1520757',
  'https://docs.byteplus.com/en/docs/ModelArk/1366799',
  'https://powower.mintlify.app/en/byteplus/image',
  'https://doc-en.302.ai/385938976e0',
  'https://github.com/QuantumNous/new-api/tree/main/relay/channel/task/doubao',
];

const images = (req: NormalizedRequest): string[] => (Array.isArray(req.upstreamBody.image_urls) ? (req.upstreamBody.image_urls as string[]) : []);

/** The `content[]` of a Seedance task: the prompt as a text part, then the frames with their roles. */
function seedanceContent(req: NormalizedRequest): Record<string, unknown>[] {
  const frames = images(req).map((url, i) => ({ type: 'image_url', image_url: { url }, role: i === 0 ? 'first_frame' : 'last_frame' }));
  return [{ type: 'text', text: typeof req.upstreamBody.prompt === 'string' ? req.upstreamBody.prompt : '' }, ...frames];
}

function refuseTrue(field: string, why: string): (req: NormalizedRequest) => Unsupported | undefined {
  return (req) => (req.upstreamBody[field] === true ? { field, message: `\`${field}\` true is not supported through the ark protocol: ${why}` } : undefined);
}

const IN_CONTENT = { drop: 'carried in the vendor\u2019s `content[]` (a `text` part; frames as `image_url` parts with their `role`)' };

function motion(model: 'motion-1-0-pro-fast' | 'motion-1-0-pro-quality', upstream: string, lastFrame: boolean): FamilyTranslation {
  return {
    family: 'motion-1-0-pro',
    models: [model],
    defaultUpstreamModel: upstream,
    fields: {
      nsfw_check: { drop: 'false only: Ark moderates every input and output itself; no check before submission (true is refused)' },
      prompt: IN_CONTENT,
      image_urls: IN_CONTENT,
      duration: { to: 'duration', note: 'integer seconds, 2..12' },
      resolution: { to: 'resolution' },
      aspect_ratio: {
        to: 'ratio',
        map: (v, req) => (images(req).length ? 'adaptive' : v),
        note: '`adaptive` with frames (the output follows the first frame, as our contract promises no size then)',
      },
    },
    // Ark's Seedance watermark default is off in the reference, sent anyway: our results carry no vendor mark
    derive: (req) => ({ content: seedanceContent(req), watermark: false }),
    refine: (req) =>
      refuseTrue('nsfw_check', 'Ark offers no moderation before submission')(req) ??
      (!lastFrame && images(req).length > 1
        ? { field: 'image_urls', message: '`image_urls`: Seedance 1.0 pro fast takes one frame through the ark protocol (no last frame) (guess)' }
        : undefined),
  };
}

/**
 * Seedream sizes as `WxH`, total pixels within the vendor model's range (BytePlus image API reference: Seedream 4.0
 * [1280x720, 4096x4096], Seedream 4.5 [2560x1440, 4096x4096]); ratio within 1/16..16 always holds for our ratios.
 */
const DREAM_MIN_PIXELS: Record<string, number> = { 'dream-5-0-pro': 2560 * 1440, 'dream-5-0-lite': 1280 * 720 };
const DREAM_MAX_PIXELS = 4096 * 4096;

function dreamSize(req: NormalizedRequest): Unsupported | undefined {
  const { width: w, height: h } = req.expected;
  if (!w || !h) return undefined;
  const min = DREAM_MIN_PIXELS[req.model] ?? 0;
  if (w * h >= min && w * h <= DREAM_MAX_PIXELS) return undefined;
  return {
    field: 'resolution',
    message: `\`resolution\`: ${w}x${h} is outside what ${req.requestedModel} renders through the ark protocol (${Math.round(min / 1e6)}..16.8 megapixels): choose a larger tier`,
  };
}

const IN_SIZE = { drop: 'carried in the vendor\u2019s `size` (`WxH` of the output the contract derived)' };

function dream(model: 'dream-5-0-pro' | 'dream-5-0-lite', upstream: string): FamilyTranslation {
  return {
    family: 'dream-5-0',
    models: [model],
    defaultUpstreamModel: upstream,
    fields: {
      prompt: { to: 'prompt' },
      size: IN_SIZE,
      resolution: IN_SIZE,
      n: { drop: '1 only: Ark makes several images only in its sequential mode, where the model decides how many (n > 1 is refused)' },
      image_urls: { to: 'image', note: 'the list of reference URLs' },
    },
    // url answers (24-hour links the gateway keeps); one image; Seedream's watermark default is on, ours off
    derive: (req) => ({
      size: `${req.expected.width}x${req.expected.height}`,
      sequential_image_generation: 'disabled',
      response_format: 'url',
      watermark: false,
    }),
    refine: (req) =>
      Number(req.upstreamBody.n ?? 1) > 1
        ? {
            field: 'n',
            message: '`n` > 1 is not supported through the ark protocol: Seedream makes one image per call unless it chooses (submit several tasks)',
          }
        : dreamSize(req),
  };
}

export const ARK_TRANSLATION: ProtocolTranslation = {
  protocol: 'ark',
  docs: DOCS,
  families: [
    motion('motion-1-0-pro-fast', 'seedance-1-0-pro-fast-251015', false),
    motion('motion-1-0-pro-quality', 'seedance-1-0-pro-250528', true),
    dream('dream-5-0-pro', 'seedream-4-5-251128'),
    dream('dream-5-0-lite', 'seedream-4-0-250828'),
  ],
};
