import { UpstreamError } from '@gmg/errors';
import type { ChannelTarget, UpstreamMedia, UpstreamPoll, UpstreamStatus } from '../../adapter';
import { parseNativeProgress } from '../../artgen-native';
import { isObj, str, type Json } from '../../json-value';
import { isModerationFailure, truncate } from '../../upstream-failure';
import type { MjMedia } from './mj-proxy.media';

/** What a finished task shows: a grid of four, one image or a text (describe). */
export type MjShape = 'grid' | 'single' | 'text';

/** TaskStatus of both proxies (the C# one adds MODAL and CANCEL) → ours, and the native state our view shows. */
const STATUS: Record<string, { status: UpstreamStatus; native: string }> = {
  NOT_START: { status: 'pending', native: 'SUBMITTED' },
  SUBMITTED: { status: 'pending', native: 'SUBMITTED' },
  IN_PROGRESS: { status: 'processing', native: 'IN_PROGRESS' },
  MODAL: { status: 'processing', native: 'MODAL' },
  SUCCESS: { status: 'completed', native: 'SUCCESS' },
  FAILURE: { status: 'failed', native: 'FAILURE' },
  CANCEL: { status: 'failed', native: 'FAILURE' },
};

// 敏感 (sensitive) and 违规 (violation) are escaped: one non-ASCII character anywhere in a bundle makes V8 hold the
// whole bundle's source as a two-byte string (the edge's: 1.7 MiB instead of 0.7).
/** A proxy's failReason that is Midjourney's or its own content refusal ("Banned prompt detected", "可能包含敏感词"). */
const BANNED = /banned|blocked|sensitive|\u654f\u611f|\u8fdd\u89c4|moderat|violat/i;

const httpUrl = (v: unknown): string | undefined => {
  const s = str(v);
  return s && /^https?:\/\//i.test(s) && s.length <= 4096 ? s : undefined;
};

/** `imageUrls` of the C# proxy: `[{url, thumbnail}]` (or plain strings). */
const tileUrls = (v: unknown): string[] =>
  Array.isArray(v) ? v.map((x: unknown) => httpUrl(isObj(x) ? x.url : x)).filter((u): u is string => u !== undefined) : [];

/** The describe text split into its four numbered prompts (`1️⃣ …\n\n2️⃣ …`), when it has that shape. */
function promptsOf(text: string): string[] | undefined {
  const parts = text
    .split(/\n\s*\n/)
    .map((p) => p.replace(/^\s*\d\uFE0F?\u20E3\s*/u, '').trim())
    .filter(Boolean);
  return parts.length > 1 ? parts : undefined;
}

/**
 * A proxy task (`GET /mj/task/{id}/fetch`) as our poll of a task showing `shape`. The proxy's links (Discord's CDN,
 * short-lived) are handed to the gateway to keep (`media`; the grid as `nativeMedia.grid_image_url`): `native` never
 * carries a proxy link or button, so the client sees our links and our buttons only.
 */
export async function mapMjTask(t: Json, shape: MjShape, ch: ChannelTarget, media: MjMedia, describe: string): Promise<UpstreamPoll> {
  const word = typeof t.status === 'string' ? t.status.toUpperCase() : '';
  const s = STATUS[word];
  if (!s) throw new UpstreamError(`${describe}: unrecognized task status ${truncate(JSON.stringify(t.status) ?? '', 40)}`, true, undefined, 'server');
  const native: Json = { status: s.native };
  if (s.status === 'failed') {
    const reason = str(t.failReason) ?? '';
    native.fail_reason = word === 'CANCEL' ? 'Task cancelled upstream' : 'Generation failed';
    const moderation = BANNED.test(reason) || isModerationFailure(undefined, reason);
    return { status: 'failed', progress: 0, native, error: { message: String(native.fail_reason), moderation } };
  }
  if (s.status !== 'completed') return { status: s.status, progress: parseNativeProgress(t.progress), native };
  const done = await completed(t, shape, ch, media, describe);
  return { ...done, native: { ...native, ...done.native } };
}

async function completed(t: Json, kind: MjShape, ch: ChannelTarget, media: MjMedia, describe: string): Promise<UpstreamPoll> {
  if (kind === 'text') {
    const text = str(t.prompt) ?? str(t.promptEn);
    if (!text) throw new UpstreamError(`${describe}: a finished describe without its text (prompt)`, true, undefined, 'server');
    const prompts = promptsOf(text);
    return { status: 'completed', progress: 100, result: { text }, native: { description: text, ...(prompts ? { prompts } : {}) } };
  }
  const grid = httpUrl(t.imageUrl);
  const tiles = tileUrls(t.imageUrls);
  if (kind === 'single') {
    const url = tiles[0] ?? grid;
    if (!url) throw new UpstreamError(`${describe}: SUCCESS without an imageUrl`, true, undefined, 'server');
    const size = { ...(typeof t.width === 'number' ? { width: t.width } : {}), ...(typeof t.height === 'number' ? { height: t.height } : {}) };
    return { status: 'completed', progress: 100, media: [{ kind: 'image', source: { url }, ...size }] };
  }
  // a grid of four
  if (tiles.length >= 4) {
    const kept: UpstreamMedia[] = tiles.slice(0, 4).map((url) => ({ kind: 'image', source: { url } }));
    return { status: 'completed', progress: 100, media: kept, ...(grid ? { nativeMedia: { grid_image_url: { kind: 'image', source: { url: grid } } } } : {}) };
  }
  if (!grid) throw new UpstreamError(`${describe}: SUCCESS without an imageUrl`, true, undefined, 'server');
  const cut = await media.cutGrid(ch, grid);
  return { status: 'completed', progress: 100, media: cut.tiles, nativeMedia: { grid_image_url: cut.grid } };
}
