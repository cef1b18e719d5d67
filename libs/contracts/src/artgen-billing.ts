import { ARTGEN_ACTION_TABLE, ARTGEN_PATH_ACTIONS, type ArtgenPathAction } from './artgen-custom-id';
import type { BillingItem } from './models/types';

type BillingOf<A extends ArtgenPathAction> = (typeof ARTGEN_ACTION_TABLE)[A]['billing'];

/**
 * Billable actions of the art suite (spec 8), as they appear in price keys: each action's `billing` spelling
 * (ARTGEN_ACTION_TABLE), and `video-720p` (video at 720p) after video.
 */
export const ARTGEN_ACTIONS = ARTGEN_PATH_ACTIONS.flatMap((a) =>
  a === 'video' ? [ARTGEN_ACTION_TABLE[a].billing, 'video-720p'] : [ARTGEN_ACTION_TABLE[a].billing],
) as ReadonlyArray<BillingOf<ArtgenPathAction> | 'video-720p'>;
export type ArtgenAction = (typeof ARTGEN_ACTIONS)[number];

/** Every spelling a billing action is named by: the path (`high-variation`), the key (`high_variation`), `generations`. */
const BILLING_BY_NAME: ReadonlyMap<string, ArtgenAction> = new Map<string, ArtgenAction>([
  ...ARTGEN_PATH_ACTIONS.map((a) => [a, ARTGEN_ACTION_TABLE[a].billing] as const),
  ...ARTGEN_ACTIONS.map((b) => [b, b] as const),
  ['generations', 'imagine'],
]);

export const ARTGEN_VERSIONS = ['v8.2', 'v8.1', 'v7', 'v6.1', 'v5.2', 'v5.1', 'altstyle7', 'altstyle6'] as const;

export interface ArtgenBillingInput {
  /** Path form (`high-variation`, `remix-strong`, `generations`) or key form (`high_variation`). */
  action: string;
  version?: string | number;
  speed?: string;
  altStyle?: boolean;
  batchSize?: number;
}

/** Path segment or price-key spelling → billing action (`generations` is imagine); undefined when it names none. */
export function artgenAction(action: string): ArtgenAction | undefined {
  return BILLING_BY_NAME.get(action.trim().toLowerCase());
}

/**
 * `8.2`, `v8.2`, `V8.2` → v8.2 (likewise 8.1, 7, 6.1, 5.2, 5.1). With the alternate-style flag, major versions
 * 7 and 6 become altstyle7 / altstyle6. Anything else has no version-specific price (undefined).
 */
export function normalizeArtgenVersion(version: string | number | undefined, altStyle = false): string | undefined {
  if (version === undefined || version === null || version === '') return undefined;
  const raw = String(version).trim().toLowerCase();
  if (raw === 'altstyle7' || raw === 'altstyle6') return raw;
  const m = /^v?\s*(\d+)(?:\.(\d+))?$/.exec(raw);
  if (!m) return undefined;
  const major = Number(m[1]);
  const minor = m[2] === undefined ? 0 : Number(m[2]);
  if (altStyle && (major === 7 || major === 6)) return `altstyle${major}`;
  const v = minor === 0 ? `v${major}` : `v${major}.${minor}`;
  return (ARTGEN_VERSIONS as readonly string[]).includes(v) ? v : undefined;
}

/** `relax` and omitted add no suffix; `fast` and `turbo` add theirs. */
export function normalizeArtgenSpeed(speed: string | undefined): 'fast' | 'turbo' | undefined {
  const s = speed?.trim().toLowerCase();
  return s === 'fast' || s === 'turbo' ? s : undefined;
}

/** Price keys from most to least specific: action-version-speed, action-version, action-speed, action, artgen. */
export function artgenBillingItem(input: ArtgenBillingInput): BillingItem {
  const action = artgenAction(input.action);
  if (!action) throw new Error(`unknown art suite action: ${input.action}`);
  const version = normalizeArtgenVersion(input.version, input.altStyle);
  const speed = normalizeArtgenSpeed(input.speed);
  const keys: string[] = [];
  if (version && speed) keys.push(`artgen@${action}-${version}-${speed}`);
  if (version) keys.push(`artgen@${action}-${version}`);
  if (speed) keys.push(`artgen@${action}-${speed}`);
  keys.push(`artgen@${action}`, 'artgen');
  const isVideo = action === 'video' || action === 'video-720p';
  const quantity = isVideo ? Math.max(1, Math.floor(input.batchSize ?? 1)) : 1;
  const label = [action, version, speed].filter(Boolean).join(' ') + (isVideo ? ` x${quantity}` : '');
  return { keys, quantity, label };
}
