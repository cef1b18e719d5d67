import type { NormalizedRequest } from '@gmg/contracts';
import type { FamilyTranslation, FieldRule, ProtocolTranslation, Unsupported } from '../../translation';

/**
 * The FLUX API of Black Forest Labs (docs/upstreams/bfl.md): one endpoint per model, `POST /v1/<model>`, whose body
 * is the FLUX.2 input schema (`prompt`, `width`, `height`, `seed`, `safety_tolerance`, `output_format`,
 * `prompt_upsampling`, `input_image` … `input_image_8`; [flex] adds `steps` and `guidance`).
 */
const BFL_DOCS = [
  'https://docs.bfl.ai/quick_start/generating_images',
  'https://docs.bfl.ai/api-reference/models/generate-or-edit-an-image-with-flux2-[pro]',
  'https://help.bfl.ai/articles/4029171097-flux-2-technical-specifications',
] as const;

/** FLUX.2 sides are multiples of 16 (help.bfl.ai "FLUX.2 Technical Specifications"). */
const BFL_SIDE_STEP = 16;
/** `input_image` plus `input_image_2` … `input_image_8` (FLUX.2 [pro]/[max]/[flex]: up to 8 references by API). */
const BFL_MAX_REFERENCES = 8;

/** Our reference image as BFL takes it: a URL as is, Base64 without a `data:` prefix (BFL documents "URL or base64"). */
const bflImage = (ref: unknown): unknown => (typeof ref === 'string' ? ref.replace(/^data:[^,]{0,200};base64,/i, '') : ref);

const refs = (req: NormalizedRequest): unknown[] => (Array.isArray(req.upstreamBody.image_urls) ? req.upstreamBody.image_urls : []);

/**
 * What the request's contract derived, in BFL's words: the output size (absent when `size: auto` follows a reference
 * nobody measured: BFL then sizes the output after the first input image — guess, not stated on BFL's page) and
 * the second to eighth reference under their numbered names.
 */
function derive(req: NormalizedRequest): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const { width, height } = req.expected;
  if (typeof width === 'number' && typeof height === 'number') Object.assign(out, { width, height });
  refs(req)
    .slice(1, BFL_MAX_REFERENCES)
    .forEach((r, i) => (out[`input_image_${i + 2}`] = bflImage(r)));
  return out;
}

/** A size BFL would round (so not the size the client asked for, nor the one billed) is refused, naming its field. */
function refineSize(req: NormalizedRequest): Unsupported | undefined {
  const { width, height } = req.expected;
  if (typeof width !== 'number' || typeof height !== 'number') return undefined;
  if (width % BFL_SIDE_STEP === 0 && height % BFL_SIDE_STEP === 0) return undefined;
  const source = req.derived.dimensionSource;
  const field = source === 'pixel-string' ? 'size' : source === 'width-height' ? (width % BFL_SIDE_STEP ? 'width' : 'height') : 'size';
  return {
    field,
    message: `the output size ${width}x${height} is not supported for ${req.requestedModel} through the bfl protocol: FLUX.2 takes sides that are multiples of ${BFL_SIDE_STEP}`,
  };
}

const SIZE_NOTE = 'already in the derived `width`/`height`';

/** The fields every FLUX.2 endpoint takes, from our lumen-2 contract (lumen-2.contract.ts). */
const COMMON: Readonly<Record<string, FieldRule>> = {
  prompt: { to: 'prompt' },
  resolution: { drop: `${SIZE_NOTE} (the tier's size for the ratio)` },
  size: { drop: `${SIZE_NOTE} (ratio or pixel string resolved by the contract)` },
  width: { drop: SIZE_NOTE },
  height: { drop: SIZE_NOTE },
  n: { drop: 'always 1 (the contract allows only 1; BFL makes one image per task)' },
  image_urls: {
    to: 'input_image',
    map: (v) => (Array.isArray(v) ? bflImage(v[0]) : undefined),
    note: 'the first reference; the 2nd to 8th go to `input_image_2` … `input_image_8`; a `data:` prefix is removed',
  },
  output_format: { to: 'output_format' },
  seed: { to: 'seed' },
  prompt_upsampling: { to: 'prompt_upsampling' },
  safety_tolerance: { to: 'safety_tolerance', note: '0–5 on FLUX.2, as ours' },
};

const flexOnly = (f: string): FieldRule => ({ refuse: `only FLUX.2 [flex] takes \`${f}\`` });

const row = (model: string, vendor: string, fields: Readonly<Record<string, FieldRule>>): FamilyTranslation => ({
  family: `lumen-2 (${vendor})`,
  models: [model],
  defaultUpstreamModel: vendor,
  fields,
  derive,
  refine: refineSize,
});

export const BFL_TRANSLATION: ProtocolTranslation = {
  protocol: 'bfl',
  docs: BFL_DOCS,
  families: [
    row('lumen-2-flex', 'flux-2-flex', { ...COMMON, steps: { to: 'steps', note: '1–50' }, guidance: { to: 'guidance', note: '1.5–10' } }),
    row('lumen-2-pro', 'flux-2-pro', { ...COMMON, steps: flexOnly('steps'), guidance: flexOnly('guidance') }),
    row('lumen-2-max', 'flux-2-max', { ...COMMON, steps: flexOnly('steps'), guidance: flexOnly('guidance') }),
  ],
};
