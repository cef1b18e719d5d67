import { parseArtgenCustomId, type ArtgenPathAction, type NormalizedRequest } from '@gmg/contracts';
import { isObj } from '../../json-value';

/**
 * The proxy's own button for a follow-up. A proxy shows Midjourney's buttons as Discord sent them
 * (`MJ::JOB::upsample::2::<its job hash>`, `MJ::Outpaint::50::1::<hash>::SOLO` …): the same grammar as ours
 * (libs/contracts/src/artgen-custom-id.ts), with the proxy's hash. We read the grammar, never trust the hash, and
 * press the button whose action and slot (index, zoom ratio, direction) are the request's.
 */
export function proxyButtonFor(action: ArtgenPathAction, req: Pick<NormalizedRequest, 'derived'>, buttons: unknown): string | undefined {
  if (!Array.isArray(buttons)) return undefined;
  const d = req.derived;
  const index = typeof d.index === 'number' ? d.index : 1;
  const zoom = typeof d.zoomRatio === 'number' ? d.zoomRatio : 2;
  for (const b of buttons) {
    const id = isObj(b) ? b.customId : undefined;
    const parsed = parseArtgenCustomId(id);
    if (!parsed || parsed.action !== action) continue;
    if ((action === 'upscale' || action === 'variation') && parsed.index !== index) continue;
    if (action === 'zoom' && parsed.zoom_ratio !== zoom) continue;
    if (action === 'pan' && parsed.direction !== d.direction) continue;
    return id as string;
  }
  return undefined;
}
