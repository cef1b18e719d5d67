import { artgenResultOf, artgenVersionName, parseArtgenFlags, type NormalizedRequest } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import { commonSettingsProblem, type ChannelSettings, type ChannelTarget, type UpstreamAdapter } from '../../adapter';
import { isObj, str, type Json } from '../../json-value';
import { PublicHostResolver } from '../../public-host';
import type { HostCheck } from '../../results/media-download';
import { checkTranslation, type Unsupported } from '../../translation';
import { truncate } from '../../upstream-failure';
import { createVendorHttp, joinUrl, withChannelHeaders } from '../../vendor-call';
import { proxyButtonFor } from './mj-proxy.buttons';
import { fetchMj, isProxyTaskId, submitMj } from './mj-proxy.errors';
import { createMjMedia, type QuadrantCutter } from './mj-proxy.media';
import { mapMjTask, type MjShape } from './mj-proxy.status';
import { MJ_PROXY_TRANSLATION, actionOf, mjProxyActionProblem } from './mj-proxy.translation';

export interface MjProxyAdapterOptions {
  /** Per proxy call (submit, fetch) and per image download, connect to last byte. */
  timeoutMs: number;
  /** The public-host filter for images a request names by link (tests inject one). Default: the system resolver. */
  publicHosts?: HostCheck;
  /** Cuts a grid the proxy shows without tile links into its four tiles (the art worker gives it; see QuadrantCutter). */
  cutQuadrants?: QuadrantCutter;
}

/** The path prefix of the speed (C# proxy: `/mj-fast`, `/mj-turbo`, `/mj-relax`; relax is the same as omitted here). */
const SPEED_PREFIX: Readonly<Record<string, string>> = { fast: '/mj-fast', turbo: '/mj-turbo' };
const AUTH_MODES = ['mj-api-secret', 'bearer'];

/**
 * Our upstream id: `<what the task shows>:<the proxy's task id>` (`grid`, `single`, `text`). A poll reads no request,
 * and the proxy's own `action` word does not say it (Midjourney's pan gives four images, ours one).
 */
const SHAPES: readonly string[] = ['grid', 'single', 'text'];

function decodeRef(upstreamTaskId: string): { shape: MjShape; id: string } {
  const at = upstreamTaskId.indexOf(':');
  const shape = upstreamTaskId.slice(0, at);
  const id = upstreamTaskId.slice(at + 1);
  if (at < 0 || !SHAPES.includes(shape) || !isProxyTaskId(id)) {
    throw new UpstreamError('mj-proxy: the upstream task id is not a proxy task reference', false, undefined, 'not_found');
  }
  return { shape: shape as MjShape, id };
}

/**
 * `settings` of an mj-proxy channel: the common `headers` and `body` (e.g. the C# proxy's `accountFilter`) and
 * `auth`: `mj-api-secret` (default: the key in the proxy's `mj-api-secret` header) or `bearer` (`Authorization:
 * Bearer <key>`, for a proxy behind a gateway that wants it so). Body keys the adapter sets itself are refused, and
 * `notifyHook` too: this adapter polls, and a proxy's callback is not signed.
 */
function checkMjSettings(settings: Readonly<ChannelSettings>): Unsupported | undefined {
  const common = commonSettingsProblem('mj-proxy', settings, {
    options: ['auth'],
    reserved: ['prompt', 'taskId', 'customId', 'base64', 'base64Array', 'maskBase64', 'dimensions', 'state', 'notifyHook'],
    reservedWhy: 'the mj-proxy protocol sets it itself (or not at all: it polls)',
  });
  if (common) return common;
  if (settings.auth !== undefined && !AUTH_MODES.includes(settings.auth as string)) {
    return { field: 'auth', message: `\`auth\` must be one of ${AUTH_MODES.join(', ')} (the header the channel's key goes in)` };
  }
  return undefined;
}

const headersOf = (ch: ChannelTarget): Record<string, string> =>
  withChannelHeaders(ch, ch.settings.auth === 'bearer' ? { authorization: `Bearer ${ch.apiKey}` } : { 'mj-api-secret': ch.apiKey });

const prefixOf = (req: NormalizedRequest): string => SPEED_PREFIX[String(req.derived.speed)] ?? '';

/** `v7` → `--v 7`, `altstyle7` → `--niji 7`. */
function versionFlag(version: string): string {
  const niji = /^altstyle(\d+)$/.exec(version);
  return niji ? `--niji ${niji[1]}` : `--v ${version.replace(/^v/, '')}`;
}

const isNiji = (req: NormalizedRequest): boolean => /^altstyle/.test(str(req.derived.version) ?? '');

/**
 * The imagine prompt Midjourney reads: image-prompt links first, then the text, then the flags of our structured
 * fields that the prompt does not carry itself (`--ar`, `--v` / `--niji`).
 */
export function mjImaginePrompt(req: NormalizedRequest): string {
  const b = req.upstreamBody;
  const text = (str(b.prompt) ?? '').trim();
  const parsed = parseArtgenFlags(text);
  const flags = parsed.ok ? parsed.flags : {};
  const add: string[] = [];
  if (!flags.aspect && typeof b.size === 'string') add.push(`--ar ${b.size}`);
  const version = str(req.derived.version) ?? (typeof b.version === 'string' ? artgenVersionName(b.version, b.alt_style === true) : undefined);
  if (!flags.version && !flags.altStyle && version) add.push(versionFlag(version));
  const links = (Array.isArray(b.image_urls) ? b.image_urls : []).filter((u): u is string => typeof u === 'string' && /^https?:\/\//i.test(u));
  return [...links, text, ...add].join(' ');
}

const inlineImages = (v: unknown): string[] => (Array.isArray(v) ? v.filter((u): u is string => typeof u === 'string' && !/^https?:\/\//i.test(u)) : []);

/**
 * A midjourney-proxy (docs/upstreams/mj-proxy.md) serving the art suite: imagine, blend and describe are their own
 * submits; a follow-up reads its parent from the proxy and presses the proxy's own button for it
 * (`/mj/submit/action`); an inpaint waits in MODAL until our modal task sends `/mj/submit/modal`. Polled with
 * `GET /mj/task/{id}/fetch`; the proxy's links are kept by the gateway. The proxies document no cancel.
 */
export function createMjProxyAdapter(opts: MjProxyAdapterOptions): UpstreamAdapter {
  const http = createVendorHttp({ timeoutMs: opts.timeoutMs, maxResponseBytes: 4 * 1024 * 1024, userAgent: 'gmg-mj-proxy-adapter/1' });
  const media = createMjMedia({
    publicHosts: opts.publicHosts ?? new PublicHostResolver({ timeoutMs: 2000, cacheTtlMs: 60_000 }),
    timeoutMs: opts.timeoutMs,
    cutQuadrants: opts.cutQuadrants,
  });

  const fetchTask = (ch: ChannelTarget, id: string, op: 'submit' | 'poll') => {
    const path = `/mj/task/${encodeURIComponent(id)}/fetch`;
    return fetchMj(ch, op, `upstream ${ch.name} GET /mj/task/${truncate(id, 40)}/fetch`, () => http.get(joinUrl(ch.baseUrl, path), headersOf(ch)));
  };

  /** The body of the request's submit, and its path below the speed prefix. */
  async function planSubmit(ch: ChannelTarget, req: NormalizedRequest): Promise<{ path: string; body: Json }> {
    const b = req.upstreamBody;
    const action = actionOf(req);
    const common: Json = { ...(ch.settings.body ?? {}), ...(isObj(b.metadata) ? { state: JSON.stringify(b.metadata) } : {}) };
    const botType = isNiji(req) ? 'NIJI_JOURNEY' : 'MID_JOURNEY';
    const images = Array.isArray(b.image_urls) ? b.image_urls.map(String) : [];
    switch (action) {
      case 'imagine': {
        const inline = await Promise.all(inlineImages(b.image_urls).map((v) => media.dataUri(ch, v, 'image_urls')));
        return { path: '/mj/submit/imagine', body: { ...common, botType, prompt: mjImaginePrompt(req), ...(inline.length ? { base64Array: inline } : {}) } };
      }
      case 'blend': {
        const base64Array = await Promise.all(images.map((v) => media.dataUri(ch, v, 'image_urls')));
        return { path: '/mj/submit/blend', body: { ...common, botType, base64Array, dimensions: str(b.dimensions) ?? 'SQUARE' } };
      }
      case 'describe':
        return { path: '/mj/submit/describe', body: { ...common, botType, base64: await media.dataUri(ch, images[0] ?? '', 'image_urls') } };
      case 'modal': {
        const { id } = decodeRef(String(b.task_id));
        return {
          path: '/mj/submit/modal',
          body: { ...common, taskId: id, prompt: String(b.prompt), maskBase64: await media.dataUri(ch, String(b.mask_url), 'mask_url') },
        };
      }
      default: {
        // a button of the parent: read the parent from the proxy, press the proxy's own button for the action
        const { id } = decodeRef(String(b.task_id));
        const parent = await fetchTask(ch, id, 'submit');
        if (String(parent.status).toUpperCase() !== 'SUCCESS') {
          throw new UpstreamError(`mj-proxy: the parent task is ${truncate(String(parent.status), 20)}, not SUCCESS`, false, undefined, 'bad_request');
        }
        const customId = proxyButtonFor(action, req, parent.buttons);
        if (!customId) throw new UpstreamError(`mj-proxy: the parent task shows no button for ${action}`, false, undefined, 'bad_request');
        return { path: '/mj/submit/action', body: { ...common, taskId: id, customId } };
      }
    }
  }

  return {
    protocol: 'mj-proxy',
    translation: MJ_PROXY_TRANSLATION,
    check: (_ch, req) => mjProxyActionProblem(req) ?? checkTranslation(MJ_PROXY_TRANSLATION, req),
    checkSettings: checkMjSettings,

    async submit(ch, req) {
      const problem = mjProxyActionProblem(req) ?? checkTranslation(MJ_PROXY_TRANSLATION, req);
      if (problem) throw new UpstreamError(`mj-proxy: ${problem.message}`, false, undefined, 'bad_request');
      const action = actionOf(req);
      const { path, body } = await planSubmit(ch, req);
      const full = `${prefixOf(req)}${path}`;
      const describe = `upstream ${ch.name} POST ${full}`;
      const accepted = await submitMj(ch, describe, () => http.post(joinUrl(ch.baseUrl, full), body, headersOf(ch)));
      // Code 21 (MODAL) is what an inpaint waits in; on any other action it is the account's remix mode asking for a
      // prompt this request does not have.
      if (accepted.modal && action !== 'inpaint') {
        throw new UpstreamError(`${describe}: the task waits for a remix modal (the proxy account is in remix mode)`, false, undefined, 'bad_request');
      }
      const shape = artgenResultOf(action === 'modal' ? 'inpaint' : action);
      return { upstreamTaskId: `${shape === 'single' || shape === 'text' ? shape : 'grid'}:${accepted.id}` };
    },

    async poll(ch, upstreamTaskId) {
      const ref = decodeRef(upstreamTaskId);
      const task = await fetchTask(ch, ref.id, 'poll');
      return mapMjTask(task, ref.shape, ch, media, `upstream ${ch.name} GET /mj/task/${truncate(ref.id, 40)}/fetch`);
    },
  };
}
