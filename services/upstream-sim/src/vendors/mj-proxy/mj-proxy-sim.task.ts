import { randomBytes, randomUUID } from 'node:crypto';
import { artgenButtons, isArtgenPanVersion, type ArtgenPathAction } from '@gmg/contracts';
import type { ArtTask } from '../../artgen/artgen-task';
import { artFiles, artStateAt } from '../../artgen/artgen-view';
import type { VendorSimContext } from '../vendor-sim-kit';

/** A proxy task: the simulator's art task plus what a proxy shows of it. */
export interface MjSimTask extends ArtTask {
  /** The job hash of its buttons: the proxy's own (a UUID, like Discord's), never the gateway's. */
  hash: string;
  /** `[sim:gridonly]`: the task shows its grid (`imageUrl`) without tile links, as the Java proxy does. */
  gridOnly: boolean;
  botType: string;
  state?: string;
}

/** Discord's CDN keeps an attachment link about a day (its `ex=` parameter). */
const CDN_TTL_MS = 24 * 3600_000;

/** The proxy's TaskAction word of our action (the C# proxy files Vary (Region) and Vary (Strong/Subtle) as VARIATION). */
const PROXY_ACTION: Partial<Record<ArtgenPathAction, string>> = {
  imagine: 'IMAGINE',
  blend: 'BLEND',
  describe: 'DESCRIBE',
  upscale: 'UPSCALE',
  variation: 'VARIATION',
  'high-variation': 'VARIATION',
  'low-variation': 'VARIATION',
  inpaint: 'VARIATION',
  reroll: 'REROLL',
  zoom: 'ZOOM',
  pan: 'PAN',
};

let sequence = 0;
/** Proxy ids are the submit time in ms and three digits (`1320098173412546`). */
export const newProxyTaskId = (now: number): string => `${now}${String(sequence++ % 1000).padStart(3, '0')}`;
export const newSeed = (): string => randomBytes(8).toString('hex');
export const newHash = (): string => randomUUID();

/** A link that dies `CDN_TTL_MS` after it was made (SIM_VENDOR_LINK_TTL_MS in tests): `/vendor-files/<exp>/<name>`. */
function cdnUrl(ctx: VendorSimContext, fileUrl: string): string {
  const exp = Math.floor((ctx.now() + (ctx.linkTtlMs ?? CDN_TTL_MS)) / 1000);
  return `${ctx.publicUrl}/vendor-files/${exp}/${fileUrl.slice(fileUrl.lastIndexOf('/') + 1)}`;
}

/** `GET /mj/task/{id}/fetch`: the proxy's TaskInfo (camelCase) at the simulator's clock. */
export function proxyView(ctx: VendorSimContext, t: MjSimTask): Record<string, unknown> {
  const s = artStateAt(t, ctx.now());
  const done = s.status === 'SUCCESS';
  const view: Record<string, unknown> = {
    id: t.id,
    action: PROXY_ACTION[t.action] ?? 'IMAGINE',
    status: s.status,
    progress: `${s.progress}%`,
    prompt: t.prompt,
    promptEn: t.prompt,
    description: `/${t.action} ${t.prompt}`.trim(),
    botType: t.botType,
    submitTime: t.submitTime,
    buttons: [],
    imageUrl: null,
    failReason: s.failReason ?? null,
    properties: {},
    ...(t.state !== undefined ? { state: t.state } : {}),
    ...(s.startTime !== undefined ? { startTime: s.startTime } : {}),
    ...(s.finishTime !== undefined ? { finishTime: s.finishTime } : {}),
  };
  if (!done) return view;
  if (t.output.kind === 'text') return { ...view, prompt: t.prompt, promptEn: t.prompt };
  const f = artFiles(t, ctx.publicUrl);
  view.buttons = artgenButtons(t.action, t.hash, { panCapable: isArtgenPanVersion(t.version) }).map((b) => ({ ...b, emoji: '', style: 2, type: 2 }));
  if (f.grid_image_url) {
    view.imageUrl = cdnUrl(ctx, f.grid_image_url);
    if (!t.gridOnly) view.imageUrls = f.image_urls.map((u) => ({ url: cdnUrl(ctx, u), thumbnail: null }));
  } else {
    view.imageUrl = cdnUrl(ctx, f.image_urls[0] ?? '');
    view.width = f.width;
    view.height = f.height;
  }
  return view;
}
