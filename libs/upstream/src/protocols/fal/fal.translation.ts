import type { NormalizedRequest } from '@gmg/contracts';
import type { ChannelTarget } from '../../adapter';
import { familyOf, vendorModelOf, type ProtocolTranslation } from '../../translation';
import { FAL_IMAGE_FAMILIES } from './fal-image.families';
import type { FalFamily } from './fal-rules';
import { FAL_VIDEO_FAMILIES } from './fal-video.families';

/** What fal's queue API can carry, per model family (docs/upstreams/fal.md has the generated tables). */
export const FAL_TRANSLATION: ProtocolTranslation = {
  protocol: 'fal',
  docs: [
    'https://docs.fal.ai/model-endpoints/queue',
    'https://docs.fal.ai/documentation/model-apis/inference/queue',
    'https://fal.ai/docs/documentation/model-apis/errors',
    'https://fal.ai/docs/documentation/model-apis/request-errors',
  ],
  families: [...FAL_IMAGE_FAMILIES, ...FAL_VIDEO_FAMILIES],
};

/**
 * The fal endpoint id a request is submitted to: the channel's `model_map` entry (or the family's default) as the
 * base, extended by the family with the request's mode sub-path (`/edit`, `/image-to-video`, …).
 */
export function falEndpointOf(ch: Pick<ChannelTarget, 'modelMap'>, req: NormalizedRequest): string {
  const base = vendorModelOf(FAL_TRANSLATION, ch, req).replace(/^\/+|\/+$/g, '');
  const fam = familyOf(FAL_TRANSLATION, req.model) as FalFamily | undefined;
  return fam?.endpoint ? fam.endpoint(base, req) : base;
}
