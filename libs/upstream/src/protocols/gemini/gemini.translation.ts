import type { NormalizedRequest } from '@gmg/contracts';
import type { FamilyTranslation, ProtocolTranslation, Unsupported } from '../../translation';

/**
 * Veo through the Gemini API (docs/upstreams/gemini.md): `POST /v1beta/models/{model}:predictLongRunning` with
 * `{instances: [{prompt, image?, lastFrame?, referenceImages?}], parameters: {aspectRatio, resolution,
 * durationSeconds, negativePrompt, personGeneration, …}}`. The table names the vendor's keys flat; the adapter puts
 * the instance keys (`INSTANCE_KEYS`) in `instances[0]` and every other key in `parameters`.
 */
const GEMINI_DOCS = [
  'https://ai.google.dev/gemini-api/docs/video',
  'https://ai.google.dev/api/models#method:-models.predictlongrunning',
  'https://github.com/googleapis/js-genai/blob/main/src/converters/_models_converters.ts',
  'https://github.com/QuantumNous/new-api/tree/main/relay/channel/task/gemini',
] as const;

/** The keys of `instances[0]`; the rest of a translated body is `parameters` (the SDK's generateVideosSourceToMldev). */
export const INSTANCE_KEYS: readonly string[] = ['prompt', 'image', 'lastFrame', 'referenceImages', 'video'];

/** Veo 3.1's lengths (Gemini API video guide: `durationSeconds` "4", "6", "8"). */
const VEO_SECONDS = [4, 6, 8];
/** 1080p and 4k are rendered at 8 seconds only (Gemini API video guide, Veo 3.1 parameters). */
const EIGHT_SECONDS_ONLY = ['1080p', '4k'];

const str = (v: unknown): string => (typeof v === 'string' || typeof v === 'number' ? String(v) : '?');

function veoDuration(req: NormalizedRequest): Unsupported | undefined {
  const d = req.upstreamBody.duration;
  if (d === undefined) return undefined;
  if (!VEO_SECONDS.includes(Number(d))) {
    return { field: 'duration', message: `\`duration\` ${str(d)} is not one Veo renders through the gemini protocol (4, 6 or 8 seconds)` };
  }
  const res = str(req.upstreamBody.resolution).toLowerCase();
  if (EIGHT_SECONDS_ONLY.includes(res) && Number(d) !== 8) {
    return { field: 'resolution', message: `\`resolution\` ${res} is rendered by Veo at \`duration\` 8 only (got ${str(d)}); send duration 8 or 720p` };
  }
  return undefined;
}

/** Veo 3.1 Fast (`veo-3.1-fast-generate-preview`): the model Omni-Flash-Ext is (fal serves it as `fal-ai/veo3.1/fast`). */
const omni: FamilyTranslation = {
  family: 'omni-flash',
  models: ['Omni-Flash-Ext'],
  defaultUpstreamModel: 'veo-3.1-fast-generate-preview',
  fields: {
    prompt: { to: 'prompt', note: 'in `instances[0]`' },
    duration: { to: 'durationSeconds', note: 'a number: 4, 6 or 8 (10 is refused); 8 only with 1080p or 4k' },
    resolution: { to: 'resolution', note: '"720p", "1080p" or "4k"' },
    aspect_ratio: { to: 'aspectRatio', note: '"16:9" or "9:16"' },
    image_urls: {
      refuse:
        'the Gemini API takes images inline only (`bytesBase64Encoded`, no URL) and this gateway does not fetch client images for it yet: text-to-video only',
    },
    video_urls: { refuse: "Veo's `video` input extends a video Veo made; it is no motion reference" },
  },
  refine: veoDuration,
};

export const GEMINI_TRANSLATION: ProtocolTranslation = {
  protocol: 'gemini',
  docs: GEMINI_DOCS,
  families: [omni],
};
